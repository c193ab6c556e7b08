//! The Lua scripts, embedded at build time: the functions of one Redis Functions library,
//! loaded again when Redis lacks it.
//!
//! Each script is one atomic operation, kept in the slice that calls it (`queue/lua/claim.lua`;
//! the core's own, and the shared helpers, in `lua/`); it is only called through the typed
//! wrappers in the sibling modules, which go through [`Scripts::run`] (a scalar reply) or
//! [`Scripts::call`] (a JSON reply).
//!
//! Each opens with a shebang line declaring how it treats a full Redis (used memory past
//! `maxmemory`): `#!lua` scripts write, and Redis refuses them before they start, so a script
//! is never stopped halfway (without it, Redis would refuse only the first command that adds
//! data, and only if nothing was written before it); `flags=no-writes` scripts only read and
//! run anyway; `flags=allow-oom` runs anyway too, for a script that only shrinks data. The
//! library gives each function the same flags. Every script checks everything before its
//! first write.
//!
//! # What runs
//!
//! One library, [`Library`] (`FUNCTION LOAD`, called with `FCALL`): its shebang line
//! `#!lua name=tracker_<hash>`, then [`prelude`] (the names Lua shares with Rust, generated
//! from [`crate::keys`]: the queue names `Q.todo`, `Q.backfeed`, `Q.secondary`, `Q.redo`, the
//! personal queue prefix `Q.personal`, `DEFAULT_QUEUES`, and the per-minute counter codes
//! `ST.<name>` of [`crate::keys::Counter`], the derived key stems `K.<name>`, and from the
//! settings codec the `meta` hash's field names `SET.<name>` and the settings' defaults
//! `SET_DEFAULT.<name>`), then [`LIB`] (`lua/_lib.lua` and `lua/_lib_items.lua`, the shared helpers), then one function
//! per script, `<name>_<hash>`, whose body is the rest of its file and which first calls
//! `begin()` (the call's own state). Redis builds the prelude's tables and the helpers once, when
//! the library loads, not at every call. A script may split itself with a line `-- per call`
//! ([`PER_CALL`]): what comes before it (its state declared, its phases as functions) is made
//! once too, in a `do` block of its own, and its function runs what comes after. The hash is
//! the library text's own, so processes of two versions use their own functions side by side. A Redis that lacks the library (restarted
//! without its data, `FUNCTION FLUSH`) answers "Function not found": the call loads it (on every
//! master of a cluster) and runs again. Redis's error lines (`user_function:N`) are the
//! library's; [`Scripts::run`] adds the file's own line (`claim.lua:N`) to such an error.
//!
//! `tracker script NAME` prints one script alone, for `EVAL` (the lab's tools): its shebang,
//! [`prelude_for`] (the tables cut to the entries it names), [`LIB`], `begin()` and the rest of
//! its file ([`header_lines`] before its second line). Each script's header lists the prelude
//! names and helpers it uses (`Uses:`), checked by a test.
//!
//! # Replies
//!
//! A script that only counts answers an integer (`add_items`, `clear_queue`, `move_items`,
//! `release_items`, `resolve_failed`, `shuffle`, `login_undo`, `import` but in 'figures'). Every other script answers one
//! JSON text (`cjson.encode` of a table) decoded with serde: its result, or a refusal
//! `{"err": code, ...}`, decoded as [`Refusal`]. Lua's cjson writes an empty table as `{}`, so
//! lists that may be empty are read with [`lua_list`]; numbers that may pass 10^14 (bytes),
//! which cjson would print in exponent form, travel as the decimal strings Redis gave
//! ([`lua_count`]).
//!
//! ```text
//! claim          {"err":"no_project"} | [per request: [["item", ...], ["queue part", ...]] | refusal]
//!                  refusals: old_version, bad_name, blocked, token_required,
//!                            not_for_pipeline, not_active, budget, rate_limited {wait_ms},
//!                            nothing_to_give
//! done           [per report: {"counted":n,"duplicates":n} | refusal]
//!                  refusals: invalid, unknown_item {item}, never_handed_out {item},
//!                            other_pipeline {item}, overflow, domain_mismatch
//! fold           "folded" | "stale" (a scalar)
//! fold_base      {"seq","todo","out","done","failed","items":[n, ...],"bytes":[n, ...]}
//! release        {"released":[item, ...],"refused":[{"item","err"}, ...]} (each absent when empty)
//!                  per-item refusals: not_claimed, not_claimant, other_pipeline
//! backfeed       {"added":n,"duplicates":n,"again":[record number, ...]}
//!                  | refusal: no_project, filter_changed
//! item_status    {"state":"out"|"done"|"failed"|"queued"|"unknown","detail":"...","timeline":"...",
//!                 "decay":"score reclaims" | ""}
//! snapshot       {"title","seq","todo","out","done_items","done_bytes","failed","state","banner",
//!                 "downloader_count","domain_bytes":{domain: bytes},
//!                 "downloaders":[{"name","items","bytes","seen","version"}],
//!                 "recent":["event JSON", ...],"queues":[{"part","size"}]} | refusal: no_project
//! recount        {"before":n (absent when not kept),"now":n} | refusal: no_project
//! login_attempt  {} | refusal: rate_limited {wait_ms}
//! login_name     {} | refusal: rate_limited {wait_ms}
//! delete_if      1 | 0 (deleted, or gone or holding another value)
//! rescue_attempt {} | refusal: rate_limited {wait_ms}
//! fleet_flush    {"stored":n,"dropped":n,"forgotten":n}
//! offload_commit {"moved":n} | refusal: lease, stale {item}
//! refill         {"restored":n} | refusal: lease, stale {item}
//! retire_shards  {"retired":["todo:backfeed:NAME", ...]}
//! import         'figures': {"done_items","done_gap","dl_gap"} (decimal strings)
//! places         count: {"parts":[n, ...],"out","done","failed","claims","known"|null,
//!                  "done_items","disk_done","disk_todo","pq","dl_items"}
//!                places: ["1,5|c", ...] (per item: the states holding it; |c: a claim record)
//!                claims: {"held":{who: n},"counted":{who: n},"missing":[item, ...]}
//! ```

mod library;
mod prelude;
mod reply;
#[cfg(test)]
mod tests;

pub use super::refusal::Refusal;
pub use library::{Library, PER_CALL};
pub use prelude::{prelude, prelude_for};
pub use reply::{lua_count, lua_list, Accepted, Batch, Count, Reply};

use super::error::{StoreError, StoreResult};
use fred::{bytes_utils::Str, prelude::*};
use serde::de::DeserializeOwned;

/// One embedded script and the number of keys its header declares.
pub struct LuaScript {
    /// The operation's name, the file's stem.
    pub name: &'static str,
    /// The Lua source, shebang line first.
    pub source: &'static str,
    /// The files of its phases (`SLICE/lua/<name>/<part>.lua`, each a `--[[` header then local
    /// functions), by name (`claim/take`), in the order they are made: before the script's own
    /// once-part, which calls them.
    pub parts: &'static [(&'static str, &'static str)],
    /// How many `KEYS` it takes.
    pub num_keys: usize,
    /// Its function in the library, `<name>_<hash>` (set by [`Scripts::new`]).
    function: Str,
    /// The script alone, for `EVAL`.
    composed: String,
}

/// Helpers prepended to every script, after [`prelude`]: `lua/_lib.lua` (the call's state,
/// numbers, queue parts and their scores, the project's settings), then `lua/_lib_items.lua`
/// (counts, counters, bulk reads and writes, timelines and claim records, limits and blocks),
/// in that order: a helper uses only those above it.
pub const LIB: &str = concat!(
    include_str!("lua/_lib.lua"),
    include_str!("lua/_lib_items.lua")
);

/// [`prelude`] (every entry) and [`LIB`]: what a script's header is with all names; whole lines.
fn header() -> String {
    compose_header(&prelude())
}

/// `prelude` and [`LIB`]; whole lines.
fn prelude_and_lib(prelude: &str) -> String {
    let mut text = format!("{prelude}{LIB}");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// `prelude`, [`LIB`] and the call's start, as they are inserted into a script run alone with
/// `EVAL`; whole lines.
fn compose_header(prelude: &str) -> String {
    prelude_and_lib(prelude) + "begin()\n"
}

/// How many lines the prelude, [`LIB`] and `begin()` take (the same for every script): line
/// `N` of a script file without parts (the shebang being line 1) is line `header_lines() + N`
/// of the script alone ([`LuaScript::header_lines`] counts its parts too).
pub fn header_lines() -> usize {
    header().lines().count()
}

/// `lua!(SLICE: "name", KEYS [, [parts]])`: the script `SLICE/lua/name.lua` of a slice (its
/// parts in `SLICE/lua/name/`), or `lua!("name", KEYS)`: one of the core's, `lua/name.lua`.
macro_rules! lua {
    ($name:literal, $keys:expr) => {
        LuaScript::new($name, include_str!(concat!("lua/", $name, ".lua")), $keys, &[])
    };
    ($slice:ident: $name:literal, $keys:expr) => {
        LuaScript::new(
            $name,
            include_str!(concat!(stringify!($slice), "/lua/", $name, ".lua")),
            $keys,
            &[],
        )
    };
    ($slice:ident: $name:literal, $keys:expr, [$($part:literal),+]) => {
        LuaScript::new(
            $name,
            include_str!(concat!(stringify!($slice), "/lua/", $name, ".lua")),
            $keys,
            &[$((
                concat!($name, "/", $part),
                include_str!(concat!(stringify!($slice), "/lua/", $name, "/", $part, ".lua")),
            )),+],
        )
    };
}

impl LuaScript {
    fn new(
        name: &'static str,
        source: &'static str,
        num_keys: usize,
        parts: &'static [(&'static str, &'static str)],
    ) -> Self {
        let mut s = Self {
            name,
            source,
            parts,
            num_keys,
            function: Str::default(),
            composed: String::new(),
        };
        s.composed = compose(&s.eval_header(), source);
        s
    }

    /// Its parts' text, in order; whole lines.
    fn parts_text(&self) -> String {
        let mut text = String::new();
        for (_, part) in self.parts {
            text.push_str(part);
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
        text
    }

    /// Every file of it: its parts, then the script itself, by name.
    pub fn files(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.parts
            .iter()
            .copied()
            .chain(std::iter::once((self.name, self.source)))
    }

    /// What is inserted after its shebang to run it alone with `EVAL`: [`prelude_for`] (what
    /// its files name), [`LIB`], its parts and `begin()`; whole lines.
    fn eval_header(&self) -> String {
        let named: String = self.files().map(|(_, text)| text).collect();
        prelude_and_lib(&prelude_for(&named)) + &self.parts_text() + "begin()\n"
    }

    /// How many lines [`LuaScript::composed`] has before its file's second line, less one: line
    /// `N` of the file (the shebang being line 1) is line `header_lines() + N` of the script
    /// alone.
    pub fn header_lines(&self) -> usize {
        self.eval_header().lines().count()
    }

    /// The script alone, for `EVAL`: the source with the prelude, [`LIB`], its parts and
    /// `begin()` inserted after its shebang.
    pub fn composed(&self) -> &str {
        &self.composed
    }

    /// Its function in the library.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// The script's shebang line (`#!lua`, `#!lua flags=no-writes`), if it has one.
    pub fn shebang(&self) -> Option<&'static str> {
        self.source.lines().next().filter(|l| l.starts_with("#!"))
    }
}

/// `source` with `header` (whole lines) inserted after its shebang line, which Redis reads
/// only as the very first line. A line of the file lands where it would after `header` and the
/// whole file, so Redis's error line numbers are the file's plus [`header_lines`] either way.
fn compose(header: &str, source: &str) -> String {
    match source.split_once('\n') {
        Some((shebang, body)) if shebang.starts_with("#!") => format!("{shebang}\n{header}{body}"),
        _ => format!("{header}{source}"),
    }
}

/// `[REF s.add_items, ...]`: every script of `s` (a [`Scripts`]), by `&` or `&mut`.
macro_rules! every_script {
    ($s:ident, $($ref:tt)+) => {
        [
            $($ref)+ $s.add_items,
            $($ref)+ $s.backfeed,
            $($ref)+ $s.claim,
            $($ref)+ $s.done,
            $($ref)+ $s.fold,
            $($ref)+ $s.fold_base,
            $($ref)+ $s.item_status,
            $($ref)+ $s.release,
            $($ref)+ $s.snapshot,
            $($ref)+ $s.release_items,
            $($ref)+ $s.move_items,
            $($ref)+ $s.shuffle,
            $($ref)+ $s.clear_queue,
            $($ref)+ $s.resolve_failed,
            $($ref)+ $s.recount,
            $($ref)+ $s.login_attempt,
            $($ref)+ $s.login_undo,
            $($ref)+ $s.login_name,
            $($ref)+ $s.rescue_attempt,
            $($ref)+ $s.fleet_flush,
            $($ref)+ $s.offload_commit,
            $($ref)+ $s.refill,
            $($ref)+ $s.retire_shards,
            $($ref)+ $s.places,
            $($ref)+ $s.import,
            $($ref)+ $s.tally,
            $($ref)+ $s.lifetime,
            $($ref)+ $s.project_write,
            $($ref)+ $s.log_shed,
            $($ref)+ $s.delete_if,
        ]
    };
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
    /// `fold.lua`
    pub fold: LuaScript,
    /// `fold_base.lua`
    pub fold_base: LuaScript,
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
    /// `login_name.lua`
    pub login_name: LuaScript,
    /// `delete_if.lua`
    pub delete_if: LuaScript,
    /// `rescue_attempt.lua`
    pub rescue_attempt: LuaScript,
    /// `fleet_flush.lua`
    pub fleet_flush: LuaScript,
    pub offload_commit: LuaScript,
    pub refill: LuaScript,
    /// `retire_shards.lua`
    pub retire_shards: LuaScript,
    /// `places.lua`
    pub places: LuaScript,
    /// `import.lua`
    pub import: LuaScript,
    /// This process's calls of them, by script, for `/metrics`.
    pub calls: crate::script_metrics::ScriptCalls,
    /// `tally.lua`
    pub tally: LuaScript,
    /// `lifetime.lua`
    pub lifetime: LuaScript,
    /// `project_write.lua`
    pub project_write: LuaScript,
    /// `log_shed.lua`
    pub log_shed: LuaScript,
    /// The library they are functions of.
    pub library: Library,
}

impl Default for Scripts {
    fn default() -> Self {
        Self::new()
    }
}

impl Scripts {
    /// Loads the embedded sources.
    pub fn new() -> Self {
        let mut scripts = Self {
            add_items: lua!(queue: "add_items", 7),
            backfeed: lua!(queue: "backfeed", 8),
            claim: lua!(queue: "claim", 12, ["take", "pop"]),
            done: lua!(queue: "done", 14, ["read", "report"]),
            fold: lua!(figures: "fold", 11),
            fold_base: lua!(figures: "fold_base", 7),
            item_status: lua!(queue: "item_status", 7),
            release: lua!(queue: "release", 6),
            snapshot: lua!(figures: "snapshot", 11),
            release_items: lua!(queue: "release_items", 5),
            move_items: lua!(queue: "move_items", 2),
            shuffle: lua!(queue: "shuffle", 2),
            clear_queue: lua!(queue: "clear_queue", 3),
            resolve_failed: lua!(queue: "resolve_failed", 4),
            recount: lua!(upkeep: "recount", 5),
            login_attempt: lua!(people: "login_attempt", 2),
            login_undo: lua!(people: "login_undo", 2),
            login_name: lua!(people: "login_name", 1),
            rescue_attempt: lua!(projects: "rescue_attempt", 1),
            fleet_flush: lua!(fleet: "fleet_flush", 2),
            offload_commit: lua!(offload: "offload_commit", 7),
            refill: lua!(offload: "refill", 7),
            retire_shards: lua!(projects: "retire_shards", 2),
            places: lua!(upkeep: "places", 7),
            import: lua!(upkeep: "import", 8),
            tally: lua!(figures: "tally", 1),
            calls: Default::default(),
            lifetime: lua!(figures: "lifetime", 1),
            project_write: lua!(projects: "project_write", 1),
            log_shed: lua!(offload: "log_shed", 2),
            delete_if: lua!("delete_if", 1),
            library: Library::default(),
        };
        scripts.library = Library::new(&mut scripts.all_mut());
        scripts
    }

    /// All scripts, for tests.
    pub fn all(&self) -> [&LuaScript; 30] {
        every_script!(self, &)
    }

    /// All scripts, to name their functions.
    fn all_mut(&mut self) -> [&mut LuaScript; 30] {
        every_script!(self, &mut)
    }

    /// Runs `script` with `keys` and `args` (`FCALL` of its function), loading the library
    /// first if Redis lacks it; for the scripts that answer a scalar.
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
        let started = std::time::Instant::now();
        let result: StoreResult<R> = self.fcall(client, script, keys, args).await.map_err(|e| {
            match self.library.locate(e.details()) {
                Some(detail) => fred::error::Error::new(e.kind().clone(), detail).into(),
                None => e.into(),
            }
        });
        let took = started.elapsed().as_secs_f64();
        self.calls.record(
            script.name,
            took,
            result.as_ref().err().map(StoreError::kind),
        );
        result
    }

    /// `FCALL` of `script`'s function; where Redis lacks it, the library loaded (on every
    /// master of a cluster; `REPLACE`, so processes loading it at once all succeed) and the call
    /// made again.
    async fn fcall<R: FromValue>(
        &self,
        client: &Client,
        script: &LuaScript,
        keys: Vec<String>,
        args: Vec<Value>,
    ) -> Result<R, fred::error::Error> {
        match client
            .fcall(script.function.clone(), keys.clone(), args.clone())
            .await
        {
            Err(e) if e.details().contains("Function not found") => {
                client
                    .function_load_cluster::<Value, _>(true, self.library.text.clone())
                    .await?;
                client.fcall(script.function.clone(), keys, args).await
            }
            result => result,
        }
    }

    /// [`Scripts::run`] for the scripts that answer JSON: their result `T`, or their refusal.
    pub async fn call<T: DeserializeOwned>(
        &self,
        client: &Client,
        script: &LuaScript,
        keys: Vec<String>,
        args: Vec<Value>,
    ) -> StoreResult<Result<T, Refusal>> {
        let raw: String = self.run(client, script, keys, args).await?;
        match serde_json::from_str::<Reply<T>>(&raw) {
            Ok(reply) => Ok(reply.into_result()),
            Err(e) => Err(StoreError::Reply {
                script: script.name,
                detail: format!("{e}: {}", raw.chars().take(300).collect::<String>()),
            }),
        }
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
