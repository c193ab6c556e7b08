//! The Lua scripts, embedded at build time and run by SHA with a reload on `NOSCRIPT`.
//!
//! Each script is one atomic operation (`lua/<name>.lua`); it is only called through the typed
//! wrappers in the sibling modules, which go through [`Scripts::run`].

use super::{StoreError, StoreResult};
use fred::{prelude::*, types::scripts::Script};

/// One embedded script and the number of keys its header declares.
pub struct LuaScript {
    /// The operation's name, the file's stem.
    pub name: &'static str,
    /// The Lua source.
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
            script: Script::from_lua(format!("{LIB}\n{source}")),
        }
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
            backfeed: lua!("backfeed", 6),
            claim: lua!("claim", 11),
            done: lua!("done", 20),
            item_status: lua!("item_status", 6),
            release: lua!("release", 6),
            snapshot: lua!("snapshot", 11),
            release_items: lua!("release_items", 5),
            move_items: lua!("move_items", 2),
            shuffle: lua!("shuffle", 2),
            clear_queue: lua!("clear_queue", 1),
            resolve_failed: lua!("resolve_failed", 3),
            login_attempt: lua!("login_attempt", 2),
            login_undo: lua!("login_undo", 2),
            rescue_attempt: lua!("rescue_attempt", 1),
        }
    }

    /// All scripts, for tests.
    pub fn all(&self) -> [&LuaScript; 15] {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn every_header_declares_the_keys_its_wrapper_passes() {
        for s in Scripts::new().all() {
            assert_eq!(header_keys(s.source), s.num_keys, "script {}", s.name);
            let names_itself = s.source.starts_with(&format!("--[[\n  {}: ", s.name));
            assert!(names_itself, "script {} opens with its purpose", s.name);
            assert!(s.source.contains("Output:"), "script {}", s.name);
        }
    }
}
