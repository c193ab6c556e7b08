//! The universal tracker's database as `tracker migrate` reads it: a read-only connection,
//! pages of its sets, hashes, sorted sets and lists (never a whole key at once), what each of
//! its keys is, and its hex charts.
//!
//! Its layout (ArchiveTeam/universal-tracker, `models/tracker/*.rb`): global `trackers` (slug ->
//! config JSON), `users` (name -> bcrypt hash), `admins`, `global_blocked`; per project, keys
//! `<slug>:<name>`: the queue sets `todo`, `todo:secondary`, `todo:redo`, `todo:d:<downloader>`;
//! `out` (item -> claim time, s) and `claims` (item -> "IP DOWNLOADER"), `done`, `done_counter`;
//! `downloader_count`, `downloader_bytes`, `downloader_version`, `domain_bytes`; the charts
//! `chart:total_items`, `chart:total_bytes`, `chart:downloader_bytes:<downloader>` ("YYYYmmddHHMM=hex "
//! appended per minute); `log` and its archives `log:<time>` (lists of JSON); `blocked`;
//! `upload_target`, `inactive_upload_target`; `tracker_admins`; limits and version strings.

use fred::prelude::*;

/// How much of a chart string one `GETRANGE` reads.
const CHART_CHUNK: usize = 256 * 1024;

/// A read-only connection to the old tracker's Redis.
pub struct Source {
    client: Client,
}

/// A page of a scan: the next cursor ("0" at the end) and the flat reply.
pub type Page = (String, Vec<String>);

impl Source {
    /// Connects to `url` (`redis://HOST:PORT/DB`).
    pub async fn connect(url: &str) -> Result<Self, String> {
        let config = match url.strip_prefix("redis+unix://") {
            Some(path) => Config {
                server: ServerConfig::new_unix_socket(path),
                ..Config::default()
            },
            None => Config::from_url(url).map_err(|e| format!("{url}: {e}"))?,
        };
        let client = Builder::from_config(config)
            .with_connection_config(|c| {
                c.connection_timeout = std::time::Duration::from_secs(5);
                c.max_command_attempts = 3;
            })
            .with_performance_config(|p| {
                p.default_command_timeout = std::time::Duration::from_secs(60)
            })
            .build()
            .map_err(|e| format!("{url}: {e}"))?;
        client.init().await.map_err(|e| format!("{url}: {e}"))?;
        Ok(Self { client })
    }

    /// One page of `cmd key cursor COUNT 1000` (`SSCAN`, `HSCAN`, `ZSCAN`), or of `SCAN cursor
    /// MATCH pattern COUNT 1000` when `cmd` is `SCAN` (`key` is then the pattern).
    pub async fn page(&self, cmd: &'static str, key: &str, cursor: &str) -> Result<Page, Error> {
        let args: Vec<&str> = if cmd == "SCAN" {
            vec![cursor, "MATCH", key, "COUNT", "1000"]
        } else {
            vec![key, cursor, "COUNT", "1000"]
        };
        let name = match cmd {
            "SCAN" => fred::cmd!("SCAN"),
            "SSCAN" => fred::cmd!("SSCAN"),
            "HSCAN" => fred::cmd!("HSCAN"),
            _ => fred::cmd!("ZSCAN"),
        };
        self.client.custom(name, args).await
    }

    /// Every page of a scan, handed to `each` in order.
    pub async fn scan_all(
        &self,
        cmd: &'static str,
        key: &str,
        mut each: impl FnMut(Vec<String>),
    ) -> Result<(), Error> {
        let mut cursor = "0".to_string();
        loop {
            let (next, page) = self.page(cmd, key, &cursor).await?;
            each(page);
            if next == "0" {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// How many elements each of `keys` holds, by its type (a string: one): two pipelined
    /// round trips for the page (every `TYPE`, then every size), not two per key.
    pub async fn sizes(&self, keys: &[&str]) -> Result<Vec<(String, u64)>, Error> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let pipe = self.client.pipeline();
        for key in keys {
            let _: () = pipe.custom(fred::cmd!("TYPE"), vec![*key]).await?;
        }
        let kinds: Vec<String> = pipe.all().await?;
        let pipe = self.client.pipeline();
        let mut asked = Vec::with_capacity(keys.len());
        for (key, kind) in keys.iter().zip(&kinds) {
            let cmd = match kind.as_str() {
                "set" => fred::cmd!("SCARD"),
                "zset" => fred::cmd!("ZCARD"),
                "hash" => fred::cmd!("HLEN"),
                "list" => fred::cmd!("LLEN"),
                _ => continue,
            };
            let _: () = pipe.custom(cmd, vec![*key]).await?;
            asked.push(kind);
        }
        let counted: Vec<u64> = if asked.is_empty() {
            Vec::new()
        } else {
            pipe.all().await?
        };
        let mut counted = counted.into_iter();
        Ok(kinds
            .into_iter()
            .map(|kind| {
                let n = match kind.as_str() {
                    "set" | "zset" | "hash" | "list" => counted.next().unwrap_or(0),
                    "string" => 1,
                    _ => 0,
                };
                (kind, n)
            })
            .collect())
    }

    /// How many keys the database holds.
    pub async fn dbsize(&self) -> Result<u64, Error> {
        self.client.dbsize().await
    }

    /// A string key, or none.
    pub async fn get(&self, key: &str) -> Result<Option<String>, Error> {
        self.client.get(key).await
    }

    /// The hex chart string `key` (entries `YYYYmmddHHMM=hex`, by minute), read [`CHART_CHUNK`] bytes at a time
    /// with `GETRANGE`, never whole: a chart gains an entry a minute, megabytes over years.
    pub async fn chart(&self, key: &str) -> Result<Vec<(u64, u64)>, Error> {
        let (mut points, mut tail, mut at) = (Vec::new(), String::new(), 0);
        loop {
            let (from, to) = (at.to_string(), (at + CHART_CHUNK - 1).to_string());
            let chunk: String = self
                .client
                .custom(fred::cmd!("GETRANGE"), vec![key, &from, &to])
                .await?;
            let last = chunk.len() < CHART_CHUNK;
            tail.push_str(&chunk);
            take_entries(&mut tail, last, &mut points);
            if last {
                return Ok(in_order(points));
            }
            at += CHART_CHUNK;
        }
    }

    /// The scores of `members` of sorted set `key` (none where absent).
    pub async fn zmscore(&self, key: &str, members: &[String]) -> Result<Vec<Option<f64>>, Error> {
        if members.is_empty() {
            return Ok(vec![]);
        }
        let mut args = vec![key.to_string()];
        args.extend(members.iter().cloned());
        let raw: Vec<Value> = self.client.custom(fred::cmd!("ZMSCORE"), args).await?;
        Ok(raw.into_iter().map(|v| v.as_f64()).collect())
    }

    /// Which of `fields` hash `key` has.
    pub async fn hmget(&self, key: &str, fields: &[String]) -> Result<Vec<Option<String>>, Error> {
        if fields.is_empty() {
            return Ok(vec![]);
        }
        self.client.hmget(key, fields.to_vec()).await
    }

    /// Elements `from` to `from + 999` of list `key`.
    pub async fn list_page(&self, key: &str, from: i64) -> Result<Vec<String>, Error> {
        self.client.lrange(key, from, from + 999).await
    }

    /// Closes the connection.
    pub async fn quit(&self) {
        let _ = self.client.quit().await;
    }
}

/// What a key of the old tracker is, and what the migration does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fate {
    /// Carried over.
    Carried,
    /// Written to a file (the logs: a log entry moved into the completion log would be counted
    /// again).
    File,
    /// Not carried: what it is, and why, is said.
    NotCarried(&'static str),
    /// Short-lived: caches, rate counters, budgets rebuilt from the claims.
    Transient,
}

/// The kind of a project key (`rest`: the key without `<slug>:`), and its fate.
pub fn project_key(rest: &str) -> Option<(&'static str, Fate)> {
    use Fate::*;
    let kind = match rest {
        "todo" => ("queue todo", Carried),
        "todo:secondary" => ("queue todo:secondary", Carried),
        "todo:redo" => ("queue todo:redo", Carried),
        "out" => ("out (claim times)", Carried),
        "claims" => ("claims", Carried),
        "done" => ("done", Carried),
        "done_counter" => ("done_counter", Carried),
        "downloader_count" | "downloader_bytes" | "downloader_version" => {
            ("downloader figures", Carried)
        }
        "domain_bytes" => ("domain_bytes", Carried),
        "chart:total_items" | "chart:total_bytes" => ("project chart", Carried),
        "blocked" => ("blocked", Carried),
        "upload_target" | "inactive_upload_target" => ("upload targets", Carried),
        "tracker_admins" => ("tracker_admins", Carried),
        "requests_per_minute" | "min_downloader_budget" => ("limits", Carried),
        "log" => ("log", File),
        "extra_parameters" => (
            "extra_parameters",
            NotCarried("Ruby code evaluated per claim: set the project's `extra` fields instead"),
        ),
        "current_version" | "current_version_update_message" => (
            "current_version",
            NotCarried("the dashboard's update notice: set `min_version` or the banner here"),
        ),
        "http_upload_target" => (
            "http_upload_target",
            NotCarried("upload targets of before 2013, not read by the old tracker either"),
        ),
        "blocked-log" | "add-log" => (
            "blocked-log / add-log",
            NotCarried("records of refused dones and rescue-me additions"),
        ),
        "chart:previous_timestamp" | "chart:previous_chart_data_urls" | "items_done_chartdata" => {
            ("chart bookkeeping", Transient)
        }
        "downloader_budget" | "requests_per_minute:monitor" => ("budgets", Transient),
        _ if rest.starts_with("todo:d:") => ("personal queues", Carried),
        _ if rest.starts_with("log:") => ("log archives", File),
        _ if rest.starts_with("chart:downloader_bytes:") => ("downloader charts", Carried),
        _ if rest.starts_with("downloader_chartdata:") => (
            "downloader_chartdata",
            NotCarried("charts of before March 2013"),
        ),
        _ if rest.starts_with("upload_log_") => {
            ("upload logs", NotCarried("records of `uploaded` reports"))
        }
        _ if rest.starts_with("requests_processed:") || rest.starts_with("requests_granted:") => {
            ("rate counters", Transient)
        }
        _ => return None,
    };
    Some(kind)
}

/// The Redis type the universal tracker wrote a carried key of kind `kind` as (`TYPE`'s answer);
/// none for kinds not carried.
pub fn written_as(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "queue todo"
        | "queue todo:secondary"
        | "queue todo:redo"
        | "personal queues"
        | "done"
        | "blocked"
        | "upload targets"
        | "tracker_admins"
        | "admins"
        | "global_blocked" => "set",
        "out (claim times)" => "zset",
        "claims" | "downloader figures" | "domain_bytes" | "trackers" | "users" => "hash",
        "done_counter"
        | "project chart"
        | "downloader charts"
        | "limits"
        | "warriorhq:projects_json" => "string",
        "log" | "log archives" => "list",
        _ => return None,
    })
}

/// The kind of a global key, and its fate; none for a key the old tracker does not write.
pub fn global_key(key: &str) -> Option<(&'static str, Fate)> {
    use Fate::*;
    Some(match key {
        "trackers" => ("trackers", Carried),
        "users" => ("users", Carried),
        "admins" => ("admins", Carried),
        "global_blocked" => ("global_blocked", Carried),
        "tracker_manager_config" => (
            "tracker_manager_config",
            NotCarried("the pub/sub channel and live log hosts: this tracker publishes on its own"),
        ),
        "admin_password" => (
            "admin_password",
            NotCarried("a plain-text password of before accounts, unused by the old tracker"),
        ),
        _ if key.starts_with("cache:") => ("caches", Transient),
        "warriorhq:projects_json" => ("warriorhq:projects_json", Carried),
        _ if key.starts_with("warriorhq:") => (
            "warriorhq",
            NotCarried("Warrior HQ's warriors expire in 15 minutes and come back by themselves"),
        ),
        _ => return None,
    })
}

/// A hex chart string ("YYYYmmddHHMM=hex " per minute) as (minute since the epoch, value),
/// in order; entries that do not parse are left out.
#[cfg(test)]
pub fn hex_chart(raw: &str) -> Vec<(u64, u64)> {
    let mut points = Vec::new();
    hex_entries(raw, &mut points);
    in_order(points)
}

/// The entries `YYYYmmddHHMM=hex` of `text` (whole entries, separated by spaces) added to
/// `points`; one that does not read is passed over.
fn hex_entries(text: &str, points: &mut Vec<(u64, u64)>) {
    points.extend(text.split_whitespace().filter_map(|entry| {
        let (stamp, hex) = entry.split_once('=')?;
        Some((stamp_minute(stamp)?, u64::from_str_radix(hex, 16).ok()?))
    }));
}

/// `points` by minute, one a minute.
fn in_order(mut points: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    points.sort_unstable();
    points.dedup_by_key(|p| p.0);
    points
}

/// Reads the whole entries of `tail` (all of it when `last`, else up to its last space) into
/// `points` and keeps only the unfinished entry in `tail`: a chart string read a chunk at a
/// time.
fn take_entries(tail: &mut String, last: bool, points: &mut Vec<(u64, u64)>) {
    let end = if last {
        tail.len()
    } else {
        tail.rfind(' ').map_or(0, |i| i + 1)
    };
    hex_entries(&tail[..end], points);
    tail.drain(..end);
}

/// "YYYYmmddHHMM" (UTC) as minutes since the epoch.
fn stamp_minute(stamp: &str) -> Option<u64> {
    if stamp.len() != 12 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let text = format!(
        "{}-{}-{}T{}:{}:00Z",
        &stamp[0..4],
        &stamp[4..6],
        &stamp[6..8],
        &stamp[8..10],
        &stamp[10..12]
    );
    let t = humantime::parse_rfc3339(&text).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs() / 60)
}

/// The project chart from the items and bytes series: a point at every minute of either, each
/// series carried forward where the other has a point it lacks.
pub fn merge_charts(items: &[(u64, u64)], bytes: &[(u64, u64)]) -> Vec<(u64, u64, u64)> {
    let mut minutes: Vec<u64> = items.iter().chain(bytes).map(|p| p.0).collect();
    minutes.sort_unstable();
    minutes.dedup();
    let (mut i, mut b, mut last_i, mut last_b) = (0, 0, 0, 0);
    minutes
        .into_iter()
        .map(|m| {
            while i < items.len() && items[i].0 <= m {
                last_i = items[i].1;
                i += 1;
            }
            while b < bytes.len() && bytes[b].0 <= m {
                last_b = bytes[b].1;
                b += 1;
            }
            (m, last_i, last_b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_read_in_chunks_is_the_chart_read_whole() {
        let raw: String = (0..500u64)
            .map(|i| {
                format!(
                    "2013031{}{:02}{:02}={:08x} ",
                    7 + i / 1440 % 2,
                    i / 60 % 24,
                    i % 60,
                    i * 977
                )
            })
            .collect();
        let whole = hex_chart(&raw);
        assert_eq!(whole.len(), 500);
        for size in [1, 7, 20, 21, 64, 1000] {
            let (mut points, mut tail) = (Vec::new(), String::new());
            let bytes = raw.as_bytes();
            for (i, chunk) in bytes.chunks(size).enumerate() {
                tail.push_str(std::str::from_utf8(chunk).unwrap());
                let last = (i + 1) * size >= bytes.len();
                take_entries(&mut tail, last, &mut points);
                assert!(
                    tail.len() <= 21 + size,
                    "the unfinished entry only: {tail:?}"
                );
            }
            assert!(tail.is_empty());
            assert_eq!(in_order(points), whole, "chunks of {size}");
        }
    }

    #[test]
    fn hex_charts_read_as_minutes_and_values() {
        let points =
            hex_chart("201303171234=0000bc55 201303171235=0000bc61 bad=1 201303171236=zz ");
        let minute = 1_363_523_640 / 60; // 2013-03-17T12:34:00Z
        assert_eq!(points, vec![(minute, 0xbc55), (minute + 1, 0xbc61)]);
    }

    #[test]
    fn charts_merge_carrying_each_series_forward() {
        let merged = merge_charts(&[(1, 10), (3, 30)], &[(1, 100), (2, 200)]);
        assert_eq!(merged, vec![(1, 10, 100), (2, 10, 200), (3, 30, 200)]);
    }

    #[test]
    fn every_kind_of_old_key_has_a_fate() {
        assert_eq!(project_key("todo:d:alice").unwrap().1, Fate::Carried);
        assert_eq!(
            project_key("log:2013-04-17T21:12:34Z").unwrap().1,
            Fate::File
        );
        assert!(matches!(
            project_key("extra_parameters").unwrap().1,
            Fate::NotCarried(_)
        ));
        assert!(project_key("something_else").is_none());
        assert!(global_key("cache:x:stats.json.gz").is_some());
        assert!(global_key("mystery").is_none());
    }
}
