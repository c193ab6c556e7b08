//! The Lua scripts, embedded at build time and run by SHA with a reload on `NOSCRIPT`.
//!
//! Each script is one atomic operation (`lua/<name>.lua`); it is only called through the typed
//! wrappers in the sibling modules, which go through [`Scripts::run`].
//!
//! Each opens with a shebang line (Redis 7) declaring how it treats a full Redis (used memory
//! past `maxmemory`): `#!lua` scripts write, and Redis refuses them before they start, so a
//! script is never stopped halfway (without the line, Redis would refuse only the first
//! command that adds data, and only if nothing was written before it); `flags=no-writes`
//! scripts only read and run anyway; `flags=allow-oom` runs anyway too, for a script that only
//! shrinks data.

use super::{StoreError, StoreResult};
use fred::{prelude::*, types::scripts::Script};

/// One embedded script and the number of keys its header declares.
pub struct LuaScript {
    /// The operation's name, the file's stem.
    pub name: &'static str,
    /// The Lua source, shebang line first.
    pub source: &'static str,
    /// How many `KEYS` it takes.
    pub num_keys: usize,
    script: Script,
}

/// Helpers prepended to every script (`lua/_lib.lua`).
pub const LIB: &str = include_str!("lua/_lib.lua");

macro_rules! lua {
    ($name:literal, $keys:expr) => {
        LuaScript::new($name, include_str!(concat!("lua/", $name, ".lua")), $keys)
    };
}

impl LuaScript {
    fn new(name: &'static str, source: &'static str, num_keys: usize) -> Self {
        Self {
            name,
            source,
            num_keys,
            script: Script::from_lua(with_lib(source)),
        }
    }

    /// The script's shebang line (`#!lua`, `#!lua flags=no-writes`), if it has one.
    pub fn shebang(&self) -> Option<&'static str> {
        self.source.lines().next().filter(|l| l.starts_with("#!"))
    }
}

/// `source` with [`LIB`] inserted after its shebang line, which Redis reads only as the very
/// first line. A line of the file lands where it would after `LIB` and the whole file, so the
/// line numbers of Redis's errors are the same either way.
fn with_lib(source: &str) -> String {
    match source.split_once('\n') {
        Some((shebang, body)) if shebang.starts_with("#!") => format!("{shebang}\n{LIB}\n{body}"),
        _ => format!("{LIB}\n{source}"),
    }
}

/// Every script of the store.
pub struct Scripts {
    /// `add_items.lua`
    pub add_items: LuaScript,
    /// `backfeed.lua`
    pub backfeed: LuaScript,
    /// `claim.lua`
    pub claim: LuaScript,
    /// `done.lua`
    pub done: LuaScript,
    /// `item_status.lua`
    pub item_status: LuaScript,
    /// `release.lua`
    pub release: LuaScript,
    /// `snapshot.lua`
    pub snapshot: LuaScript,
    /// `release_items.lua`
    pub release_items: LuaScript,
    /// `move_items.lua`
    pub move_items: LuaScript,
    /// `shuffle.lua`
    pub shuffle: LuaScript,
    /// `clear_queue.lua`
    pub clear_queue: LuaScript,
    /// `resolve_failed.lua`
    pub resolve_failed: LuaScript,
    /// `recount.lua`
    pub recount: LuaScript,
    /// `login_attempt.lua`
    pub login_attempt: LuaScript,
    /// `login_undo.lua`
    pub login_undo: LuaScript,
    /// `rescue_attempt.lua`
    pub rescue_attempt: LuaScript,
}

impl Default for Scripts {
    fn default() -> Self {
        Self::new()
    }
}

impl Scripts {
    /// Loads the embedded sources.
    pub fn new() -> Self {
        Self {
            add_items: lua!("add_items", 6),
            backfeed: lua!("backfeed", 7),
            claim: lua!("claim", 11),
            done: lua!("done", 20),
            item_status: lua!("item_status", 6),
            release: lua!("release", 6),
            snapshot: lua!("snapshot", 11),
            release_items: lua!("release_items", 5),
            move_items: lua!("move_items", 2),
            shuffle: lua!("shuffle", 2),
            clear_queue: lua!("clear_queue", 2),
            resolve_failed: lua!("resolve_failed", 4),
            recount: lua!("recount", 5),
            login_attempt: lua!("login_attempt", 2),
            login_undo: lua!("login_undo", 2),
            rescue_attempt: lua!("rescue_attempt", 1),
        }
    }

    /// All scripts, for tests.
    pub fn all(&self) -> [&LuaScript; 16] {
        [
            &self.add_items,
            &self.backfeed,
            &self.claim,
            &self.done,
            &self.item_status,
            &self.release,
            &self.snapshot,
            &self.release_items,
            &self.move_items,
            &self.shuffle,
            &self.clear_queue,
            &self.resolve_failed,
            &self.recount,
            &self.login_attempt,
            &self.login_undo,
            &self.rescue_attempt,
        ]
    }

    /// Runs `script` with `keys` and `args` by SHA, loading it first if Redis lost it.
    pub async fn run<R: FromValue>(
        &self,
        client: &Client,
        script: &LuaScript,
        keys: Vec<String>,
        args: Vec<Value>,
    ) -> StoreResult<R> {
        if let Err(detail) = one_slot(&keys) {
            return Err(StoreError::Reply {
                script: script.name,
                detail,
            });
        }
        if keys.len() != script.num_keys {
            return Err(StoreError::Reply {
                script: script.name,
                detail: format!(
                    "called with {} keys, declares {}",
                    keys.len(),
                    script.num_keys
                ),
            });
        }
        Ok(script
            .script
            .evalsha_with_reload(client, keys, args)
            .await?)
    }
}

/// Checks that `keys` hash to one Redis Cluster slot, as a script's keys must on a cluster
/// (`CROSSSLOT` otherwise). Checked on every call, on a single server too, so that a wrapper
/// passing keys of two slots fails in every test that calls it, not only on a cluster.
pub fn one_slot(keys: &[String]) -> Result<(), String> {
    let Some(first) = keys.first() else {
        return Ok(());
    };
    let slot = fred::util::redis_keyslot(first.as_bytes());
    match keys
        .iter()
        .find(|k| fred::util::redis_keyslot(k.as_bytes()) != slot)
    {
        Some(other) => Err(format!(
            "keys in different cluster slots: {first} ({slot}) and {other} ({})",
            fred::util::redis_keyslot(other.as_bytes())
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_two_slots_are_refused() {
        let k = |s: &str| s.to_string();
        assert!(one_slot(&[]).is_ok());
        assert!(one_slot(&[k("t:{p}:meta"), k("t:{p}:out"), k("t:{p}:todo:d:x")]).is_ok());
        let err = one_slot(&[k("t:{p}:meta"), k("t:{q}:out")]).unwrap_err();
        assert!(err.contains("t:{q}:out"), "{err}");
        assert!(one_slot(&[
            k("t:admin:fail:ip:1.2.3.4"),
            k("t:admin:fail:pair:1.2.3.4|x")
        ])
        .is_err());
    }

    /// The number of `KEYS[i]` lines in a script's header.
    fn header_keys(source: &str) -> usize {
        let header = source.split("]]").next().unwrap_or_default();
        header
            .lines()
            .filter(|l| l.trim_start().starts_with("KEYS["))
            .count()
    }

    #[test]
    fn the_library_defines_rcall_for_every_script() {
        assert!(LIB.contains("local rcall = redis.call"));
    }

    #[test]
    fn every_script_declares_how_it_treats_a_full_redis() {
        let scripts = Scripts::new();
        for s in scripts.all() {
            let allowed = ["#!lua", "#!lua flags=no-writes", "#!lua flags=allow-oom"];
            assert!(
                s.shebang().is_some_and(|l| allowed.contains(&l)),
                "script {} opens with one of {allowed:?}",
                s.name
            );
            let composed = with_lib(s.source);
            assert!(composed.starts_with(&format!("{}\n", s.shebang().unwrap_or_default())));
            assert_eq!(composed.matches("#!lua").count(), 1, "script {}", s.name);
            // Redis's error line numbers stay what they were with the library first.
            let lib_first = format!("{LIB}\n{}", s.source);
            assert_eq!(composed.lines().count(), lib_first.lines().count());
        }
        // The leaderboard and item lookups keep answering when Redis is full.
        for s in [&scripts.snapshot, &scripts.item_status] {
            assert_eq!(
                s.shebang(),
                Some("#!lua flags=no-writes"),
                "script {}",
                s.name
            );
        }
    }

    #[test]
    fn every_header_declares_the_keys_its_wrapper_passes() {
        for s in Scripts::new().all() {
            assert_eq!(header_keys(s.source), s.num_keys, "script {}", s.name);
            let body = s.source.split_once('\n').map_or("", |(_, b)| b);
            let names_itself = body.starts_with(&format!("--[[\n  {}: ", s.name));
            assert!(names_itself, "script {} opens with its purpose", s.name);
            assert!(s.source.contains("Output:"), "script {}", s.name);
        }
    }
}
