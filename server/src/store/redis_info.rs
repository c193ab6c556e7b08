//! Redis's own figures of its commands for `GET /metrics`: every command's calls, time and
//! failures (`INFO commandstats`) and its latency percentiles (`INFO latencystats`, Redis 7),
//! read from every primary of a cluster and added up. They count every client of that Redis
//! (every tracker process, and the commands the Lua scripts run), since Redis started.
//!
//! Also this process's failed Redis calls by kind, counted where a Redis error becomes a
//! [`StoreError`]: every call the tracker makes goes through that conversion when it fails.

use super::error::StoreResult;
pub use super::error::{ErrorCounts, REDIS_ERRORS};
use super::redis_core::Store;
use crate::embedded_redis::HASH_LISTPACK_ENTRIES;
use fred::{cmd, prelude::*, types::InfoKind};
use std::collections::BTreeMap;

/// One command's figures in `INFO commandstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandStat {
    /// Calls that ran.
    pub calls: u64,
    /// Time inside Redis, in µs.
    pub usec: u64,
    /// Calls that ran and answered an error.
    pub failed: u64,
    /// Calls refused before they ran (a wrong argument count, `OOM`, ...).
    pub rejected: u64,
}

/// Redis's figures of its commands, every primary added up.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RedisCommands {
    /// By command name, lower case, subcommands as `config|get`.
    pub commands: BTreeMap<String, CommandStat>,
    /// By command name: its percentiles (`p50`, `p99`, `p99.9`) in µs; on a cluster, the
    /// highest of its primaries'.
    pub latency: BTreeMap<String, Vec<(String, f64)>>,
}

impl Store {
    /// A client on each primary with its name: its address on a cluster (whose client holds a
    /// connection to each primary; no replicas are read), `server` for a single server.
    fn primaries(&self) -> Vec<(String, fred::clients::WithOptions<Client>)> {
        let client = self.pool.next();
        if client.is_clustered() {
            client
                .active_connections()
                .into_iter()
                .map(|node| (node.to_string(), client.with_cluster_node(node)))
                .collect()
        } else {
            vec![("server".into(), client.with_options(&Default::default()))]
        }
    }

    /// Redis's figures of its commands, from every primary.
    pub async fn redis_commands(&self) -> StoreResult<RedisCommands> {
        let mut out = RedisCommands::default();
        let mut texts = Vec::new();
        for (_, on) in self.primaries() {
            let stats: String = on.info(Some(InfoKind::CommandStats)).await?;
            let latency: String = on.custom(cmd!("INFO"), vec!["latencystats"]).await?;
            texts.push((stats, latency));
        }
        for (stats, latency) in texts {
            for (name, s) in parse_commandstats(&stats) {
                let sum = out.commands.entry(name).or_default();
                sum.calls += s.calls;
                sum.usec += s.usec;
                sum.failed += s.failed;
                sum.rejected += s.rejected;
            }
            for (name, ps) in parse_latencystats(&latency) {
                let have = out.latency.entry(name).or_default();
                for (p, v) in ps {
                    match have.iter_mut().find(|(q, _)| *q == p) {
                        Some((_, w)) => *w = w.max(v),
                        None => have.push((p, v)),
                    }
                }
            }
        }
        Ok(out)
    }
}

/// `INFO commandstats`' lines, by command:
///
/// ```text
/// # Commandstats
/// cmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,rejected_calls=0,failed_calls=1
/// cmdstat_config|get:calls=1,usec=20,usec_per_call=20.00,rejected_calls=0,failed_calls=0
/// ```
///
/// Before Redis 6.2 there are no `rejected_calls`/`failed_calls`: read as 0.
pub fn parse_commandstats(text: &str) -> Vec<(String, CommandStat)> {
    text.lines()
        .filter_map(|line| {
            let (name, fields) = line.trim().strip_prefix("cmdstat_")?.split_once(':')?;
            let mut stat = CommandStat::default();
            for field in fields.split(',') {
                let Some((k, v)) = field.split_once('=') else {
                    continue;
                };
                let slot = match k {
                    "calls" => &mut stat.calls,
                    "usec" => &mut stat.usec,
                    "failed_calls" => &mut stat.failed,
                    "rejected_calls" => &mut stat.rejected,
                    _ => continue,
                };
                *slot = v.parse().unwrap_or(0);
            }
            Some((name.to_ascii_lowercase(), stat))
        })
        .collect()
}

/// `INFO latencystats`' lines (Redis 7), by command: its percentiles in µs.
///
/// ```text
/// # Latencystats
/// latency_percentiles_usec_evalsha:p50=21.119,p99=75.263,p99.9=120.319
/// ```
pub fn parse_latencystats(text: &str) -> Vec<(String, Vec<(String, f64)>)> {
    text.lines()
        .filter_map(|line| {
            let (name, fields) = line
                .trim()
                .strip_prefix("latency_percentiles_usec_")?
                .split_once(':')?;
            let ps = fields
                .split(',')
                .filter_map(|f| {
                    let (p, v) = f.split_once('=')?;
                    Some((p.to_string(), v.parse().ok()?))
                })
                .collect();
            Some((name.to_ascii_lowercase(), ps))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commandstats_and_latencystats_are_read_line_by_line() {
        let stats = "# Commandstats\r\n\
            cmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,rejected_calls=2,failed_calls=1\r\n\
            cmdstat_config|get:calls=1,usec=20,usec_per_call=20.00\r\n\
            not a line\r\n";
        let got = parse_commandstats(stats);
        assert_eq!(
            got,
            vec![
                (
                    "evalsha".to_string(),
                    CommandStat {
                        calls: 12,
                        usec: 340,
                        failed: 1,
                        rejected: 2
                    }
                ),
                (
                    "config|get".to_string(),
                    CommandStat {
                        calls: 1,
                        usec: 20,
                        ..Default::default()
                    }
                ),
            ]
        );
        let latency = "# Latencystats\r\n\
            latency_percentiles_usec_evalsha:p50=21.119,p99=75.263,p99.9=120.319\r\n";
        assert_eq!(
            parse_latencystats(latency),
            vec![(
                "evalsha".to_string(),
                vec![
                    ("p50".to_string(), 21.119),
                    ("p99".to_string(), 75.263),
                    ("p99.9".to_string(), 120.319)
                ]
            )]
        );
    }
}

/// How a Redis the tracker was given is set where it matters to the tracker, per primary
/// ([`Store::redis_setup`]): what it does when full, whether it logs writes, and how large a hash
/// it keeps compact.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedisSetup {
    /// Per primary (its address; `server` for a single server): `redis_version`.
    pub versions: Vec<(String, String)>,
    /// Per primary: `maxmemory_policy`.
    pub policies: Vec<(String, String)>,
    /// Primaries without an append-only file (`aof_enabled:0`).
    pub without_aof: Vec<String>,
    /// Primaries whose `hash-max-listpack-entries` is above [`HASH_LISTPACK_ENTRIES`], with it
    /// (none known where `CONFIG` is refused or renamed, as on managed Redis).
    pub big_listpacks: Vec<(String, u64)>,
}

/// The oldest Redis the scripts run on: their `#!lua` flags (refused whole when Redis is full,
/// rather than midway) and `ZMSCORE`/`SMISMEMBER` need 7.
pub const REDIS_MAJOR_MIN: u32 = 7;

/// Whether `version` (`redis_version`, `7.2.4`) is older than [`REDIS_MAJOR_MIN`]; an unreadable
/// one is not judged.
pub fn too_old(version: &str) -> bool {
    version
        .split('.')
        .next()
        .and_then(|major| major.parse::<u32>().ok())
        .is_some_and(|major| major < REDIS_MAJOR_MIN)
}

impl RedisSetup {
    /// The primaries older than [`REDIS_MAJOR_MIN`], with their version.
    pub fn too_old(&self) -> Vec<&(String, String)> {
        self.versions.iter().filter(|(_, v)| too_old(v)).collect()
    }

    /// The primaries that evict keys when full (any policy but `noeviction`), with their
    /// policy: such a Redis would delete queued items, claims or sessions to make room.
    pub fn evicting(&self) -> Vec<&(String, String)> {
        self.policies
            .iter()
            .filter(|(_, p)| p != "noeviction")
            .collect()
    }

    /// Why the tracker must not run on this Redis, one sentence per problem: a primary older
    /// than 7, or one that evicts keys. `tracker serve` refuses to start on the first; while it
    /// serves, [`crate::redis_watch::RedisWatch::start_checking`] logs them and `/healthz` shows them.
    pub fn problems(&self) -> Vec<String> {
        let old = self.too_old().into_iter().map(|(node, version)| {
            format!("redis {node} is version {version}: the tracker needs Redis {REDIS_MAJOR_MIN} or later (or a server of its protocol at that level, such as Valkey)")
        });
        let evicting = self.evicting().into_iter().map(|(node, policy)| {
            format!("redis {node} has maxmemory-policy {policy}: when full it would delete queued items, claims and sessions to make room. Set `maxmemory-policy noeviction` on it (the tracker then answers 503 while Redis is full, and loses nothing)")
        });
        old.chain(evicting).collect()
    }
}

/// The value of `field` in an `INFO` section's text (`field:value` lines).
fn info_field<'a>(text: &'a str, field: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (k, v) = line.trim().split_once(':')?;
        (k == field).then_some(v)
    })
}

impl Store {
    /// How the Redis (every primary of a cluster) is set where it matters: see [`RedisSetup`].
    pub async fn redis_setup(&self) -> StoreResult<RedisSetup> {
        let mut setup = RedisSetup::default();
        for (name, on) in self.primaries() {
            let server: String = on.info(Some(InfoKind::Server)).await?;
            let version = info_field(&server, "redis_version").unwrap_or("unknown");
            setup.versions.push((name.clone(), version.to_string()));
            if too_old(version) {
                // Before 7, INFO takes one section: the version alone refuses it.
                continue;
            }
            let info: String = on
                .custom(cmd!("INFO"), vec!["memory", "persistence"])
                .await?;
            let policy = info_field(&info, "maxmemory_policy").unwrap_or("unknown");
            setup.policies.push((name.clone(), policy.to_string()));
            if info_field(&info, "aof_enabled") == Some("0") {
                setup.without_aof.push(name.clone());
            }
            let listpack: Result<Vec<String>, _> = on
                .custom(cmd!("CONFIG"), vec!["GET", "hash-max-listpack-entries"])
                .await;
            if let Some(n) = listpack
                .ok()
                .and_then(|v| v.get(1)?.parse::<u64>().ok())
                .filter(|n| *n > u64::from(HASH_LISTPACK_ENTRIES))
            {
                setup.big_listpacks.push((name, n));
            }
        }
        Ok(setup)
    }
}

#[cfg(test)]
mod setup_tests {
    use super::*;

    #[test]
    fn versions_before_7_are_too_old_and_an_unreadable_one_is_not_judged() {
        for old in ["6.2.14", "5.0.7", "6"] {
            assert!(too_old(old), "{old}");
        }
        for ok in ["7.0.15", "7.2.4", "8.0.2", "10.1", "unknown", ""] {
            assert!(!too_old(ok), "{ok}");
        }
        let text = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n";
        assert_eq!(info_field(text, "redis_version"), Some("7.0.15"));
        assert_eq!(info_field(text, "redis"), None);
    }

    #[test]
    fn only_noeviction_is_not_evicting() {
        let setup = RedisSetup {
            policies: ["noeviction", "volatile-lru", "allkeys-random"]
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("n{i}"), p.to_string()))
                .collect(),
            ..Default::default()
        };
        let evicting: Vec<&str> = setup.evicting().iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(evicting, ["n1", "n2"]);
    }
}
