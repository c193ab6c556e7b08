//! The scripts' sources: headers, shebangs, shared names, refusal codes (no Redis needed; the
//! integration tests run every script and every refusal against a real one).

use super::*;
use crate::keys::{Counter, PERSONAL, QUEUES};
use app::model::admin::{Kind, DERIVED_FIELDS, SETTING_FIELDS};
use regex::Regex;
use std::collections::BTreeSet;

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

/// A script's header comment (between `--[[` and `]]`).
fn header_of(source: &str) -> &str {
    source.split("]]").next().unwrap_or_default()
}

/// A script's code after its header, without comments.
pub(super) fn code_of(source: &str) -> String {
    let body = source.split_once("]]").map_or("", |(_, b)| b);
    body.lines()
        .map(|l| l.split("--").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

impl LuaScript {
    /// [`code_of`] each of its files (its parts, then itself), joined.
    fn code(&self) -> String {
        self.files()
            .map(|(_, text)| code_of(text))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[test]
fn every_lua_file_reads_in_one_sitting() {
    // A script past 250 lines is split into parts (`SLICE/lua/<name>/<part>.lua`) made before it;
    // the shared helpers are each written once.
    let scripts = Scripts::new();
    let files = scripts.all().into_iter().flat_map(|s| s.files()).chain([
        ("_lib", include_str!("../lua/_lib.lua")),
        ("_lib_items", include_str!("../lua/_lib_items.lua")),
    ]);
    for (name, text) in files {
        let lines = text.lines().count();
        assert!(lines <= 250, "{name}.lua has {lines} lines");
    }
    for s in scripts.all() {
        for (part, text) in s.parts {
            assert!(part.starts_with(&format!("{}/", s.name)), "{part}");
            assert!(
                text.starts_with(&format!("--[[\n  {part}: ")),
                "{part}.lua opens with its purpose"
            );
        }
        // Parts are made once, with the part of the script before its `-- per call` line.
        assert!(
            s.parts.is_empty() || s.source.contains(PER_CALL),
            "script {}",
            s.name
        );
    }
    assert!(!scripts.claim.parts.is_empty() && !scripts.done.parts.is_empty());
}

/// [`code_of`] without its string literals: the names it calls.
fn names_of(source: &str) -> String {
    let strings = Regex::new(r"'[^'\n]*'").unwrap();
    strings.replace_all(&code_of(source), "''").into_owned()
}

/// The number of `KEYS[i]` lines in a script's header.
fn header_keys(source: &str) -> usize {
    header_of(source)
        .lines()
        .filter(|l| l.trim_start().starts_with("KEYS["))
        .count()
}

#[test]
fn the_prelude_spells_the_names_of_keys_rs() {
    let p = prelude();
    for q in QUEUES {
        assert!(p.contains(&format!("'{q}'")), "{p}");
    }
    assert!(p.contains(&format!("local DEFAULT_QUEUES = '{}'", QUEUES.join(","))));
    assert!(p.contains(&format!("personal = '{PERSONAL}'")));
    for c in Counter::ALL {
        assert!(
            p.contains(&format!("{} = '{}'", c.lua_name(), c.code())),
            "{p}"
        );
    }
    let codes: BTreeSet<_> = Counter::ALL.iter().map(|c| c.code()).collect();
    assert_eq!(
        codes.len(),
        Counter::ALL.len(),
        "counter codes are distinct"
    );
    // No script spells a queue name or counter code itself.
    let spelled = Regex::new(r"'(todo[^']*|rq|ok|cl|rc|rs|f|i|b|rt|rn|bf|bd)'").unwrap();
    for s in Scripts::new().all() {
        let code = s.code();
        assert!(
            !spelled.is_match(&code),
            "script {} spells {:?}; use Q / ST",
            s.name,
            spelled.find(&code).map(|m| m.as_str())
        );
    }
    assert!(
        !spelled.is_match(&code_of(&format!("]]\n{LIB}"))),
        "_lib.lua"
    );
    // Nor a derived key's stem: those come from keys/project.rs as `K`.
    for (name, stem) in crate::keys::DERIVED {
        assert!(p.contains(&format!("{name} = '{stem}'")), "{p}");
        let quoted = format!("'{stem}");
        for s in Scripts::new().all() {
            assert!(
                !s.code().contains(&quoted),
                "script {} spells {quoted}; use K.{name}",
                s.name
            );
        }
        assert!(
            !code_of(&format!("]]\n{LIB}")).contains(&quoted),
            "_lib.lua spells {quoted}"
        );
    }
}

#[test]
fn the_scripts_read_only_settings_the_codec_writes() {
    let p = prelude();
    let known: BTreeSet<&str> = SETTING_FIELDS
        .iter()
        .map(|f| f.name)
        .chain(DERIVED_FIELDS.iter().map(|(name, _)| *name))
        .collect();
    // A field of the project's `meta` hash is named through `SET`, never spelled.
    let spelled = Regex::new(r"'H(?:M?GET|SET|SETNX|EXISTS)', meta, '").unwrap();
    let named = Regex::new(r"\bSET(_DEFAULT)?\.([a-z_]+)").unwrap();
    let defaults = p
        .lines()
        .find(|l| l.starts_with("local SET_DEFAULT = "))
        .unwrap_or_default();
    let mut seen = BTreeSet::new();
    // The scripts, and the helpers they share (`_lib.lua` parses the settings claim and done
    // act on).
    let lib = format!("]]\n{LIB}");
    let scripts = Scripts::new();
    let sources = scripts
        .all()
        .into_iter()
        .flat_map(|s| s.files())
        .map(|(name, text)| (name, text.to_string()))
        .chain([("_lib", lib)]);
    for (script, source) in sources {
        let code = code_of(&source);
        assert!(
            !spelled.is_match(&code),
            "script {} spells a field of meta; use SET",
            script
        );
        for c in named.captures_iter(&code) {
            let name = c.get(2).map_or("", |m| m.as_str());
            assert!(
                known.contains(name),
                "script {}: SET.{name} is no setting",
                script
            );
            if c.get(1).is_some() {
                assert!(
                    defaults.contains(&format!(" {name} = ")),
                    "script {}: SET_DEFAULT.{name} has no default",
                    script
                );
            }
            seen.insert(name.to_string());
        }
        // Nor is a setting's default written again: `or 86400` where it reads `auto_block_ttl`.
        for f in SETTING_FIELDS
            .iter()
            .filter(|f| !["", "0"].contains(&f.default))
            .filter(|f| matches!(f.kind, Kind::Int | Kind::Float | Kind::Text))
        {
            for spelled in [
                format!("or {}\n", f.default),
                format!("or {})", f.default),
                format!("or {},", f.default),
                format!("or '{}'", f.default),
            ] {
                assert!(
                    !code.contains(&spelled),
                    "script {} writes the default of {} ({spelled:?}); use SET_DEFAULT.{}",
                    script,
                    f.name,
                    f.name
                );
            }
        }
    }
    // The settings the claim and done scripts act on are among those read.
    for name in [
        "state",
        "rate",
        "decay_threshold",
        "domains",
        "auto_block_ttl",
        "queues",
    ] {
        assert!(seen.contains(name), "no script reads {name}");
    }
    // Each default in the prelude is the codec's.
    for f in SETTING_FIELDS.iter() {
        assert!(p.contains(&format!("{0} = '{0}'", f.name)), "{p}");
    }
    assert!(
        p.contains("decay_threshold = 0.005") && p.contains("auto_block_ttl = 86400"),
        "{p}"
    );
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
        let composed = s.composed();
        assert!(composed.starts_with(&format!("{}\n", s.shebang().unwrap_or_default())));
        assert_eq!(composed.matches("#!lua").count(), 1, "script {}", s.name);
        assert!(composed.contains(LIB), "script {}", s.name);
        for (part, text) in s.parts {
            assert!(composed.contains(text), "script {}: part {part}", s.name);
        }
        // Line N of the file is line header_lines() + N of what Redis runs.
        let composed: Vec<&str> = composed.lines().collect();
        for (i, line) in s.source.lines().enumerate().skip(1) {
            assert_eq!(composed[s.header_lines() + i], line, "script {}", s.name);
        }
        if s.parts.is_empty() {
            assert_eq!(s.header_lines(), header_lines(), "script {}", s.name);
        }
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

/// The names a script may take from the prelude and `_lib.lua`.
fn shared_names() -> BTreeSet<String> {
    let defined = Regex::new(r"(?m)^local (?:function )?([A-Za-z_]\w*)").unwrap();
    let mut names: BTreeSet<String> = defined
        .captures_iter(&header())
        .map(|c| c[1].to_string())
        .collect();
    // Every script uses rcall; the library's own state is not for scripts.
    for own in ["rcall", "DAY_MS", "clock", "pending_stats"] {
        names.remove(own);
    }
    names
}

/// Whether `code` refers to `name`: the word, not a table field (`x.name`, `{ name = 1 }`).
fn uses(code: &str, name: &str) -> bool {
    let Ok(word) = Regex::new(&format!(r"\b{name}\b")) else {
        return false;
    };
    let used = word.find_iter(code).any(|m| {
        let field = code[..m.start()].ends_with('.');
        let after = code[m.end()..].trim_start();
        let key = after.starts_with('=') && !after.starts_with("==");
        !field && !key
    });
    used
}

#[test]
fn every_header_lists_the_shared_names_it_uses() {
    let shared = shared_names();
    assert!(
        shared.contains("Q") && shared.contains("queue_groups"),
        "{shared:?}"
    );
    for s in Scripts::new().all() {
        let header = header_of(s.source);
        let listed: BTreeSet<String> = header
            .split_once("Uses:")
            .map(|(_, rest)| rest.split("\n\n").next().unwrap_or_default())
            .unwrap_or_else(|| panic!("script {} has a `Uses:` paragraph", s.name))
            .split(|c: char| c == ',' || c == '.' || c.is_whitespace())
            .filter(|w| !w.is_empty() && *w != "none")
            .map(String::from)
            .collect();
        let code: String = s.files().map(|(_, text)| names_of(text)).collect();
        let used: BTreeSet<String> = shared
            .iter()
            .filter(|name| uses(&code, name))
            .cloned()
            .collect();
        assert_eq!(
            listed, used,
            "script {}: `Uses:` lists what it uses",
            s.name
        );
    }
}

#[test]
fn every_refusal_a_script_returns_is_a_variant() {
    let variants = [
        Refusal::NoProject,
        Refusal::OldVersion,
        Refusal::BadName,
        Refusal::Blocked,
        Refusal::NotActive,
        Refusal::Budget,
        Refusal::RateLimited { wait_ms: 1 },
        Refusal::NothingToGive,
        Refusal::TokenRequired,
        Refusal::NotForPipeline,
        Refusal::Invalid,
        Refusal::UnknownItem { item: "x".into() },
        Refusal::NeverHandedOut { item: "x".into() },
        Refusal::Overflow,
        Refusal::DomainMismatch,
        Refusal::NotClaimed,
        Refusal::NotClaimant,
        Refusal::OtherPipeline { item: "x".into() },
        Refusal::FilterChanged,
        Refusal::Lease,
        Refusal::Stale { item: "x".into() },
    ];
    let known: BTreeSet<&str> = variants.iter().map(Refusal::code).collect();
    let returned = Regex::new(r"err = '(\w+)'").unwrap();
    let mut seen = BTreeSet::new();
    for s in Scripts::new().all() {
        for c in s.files().flat_map(|(_, text)| returned.captures_iter(text)) {
            assert!(
                known.contains(&c[1]),
                "script {} returns unknown {}",
                s.name,
                &c[1]
            );
            seen.insert(c[1].to_string());
        }
    }
    for code in &known {
        assert!(seen.contains(*code), "no script returns {code}");
    }
    // Each code decodes to its variant.
    for v in variants {
        let json = match &v {
            Refusal::RateLimited { wait_ms } => {
                format!(r#"{{"err":"rate_limited","wait_ms":{wait_ms}}}"#)
            }
            Refusal::UnknownItem { item }
            | Refusal::NeverHandedOut { item }
            | Refusal::OtherPipeline { item }
            | Refusal::Stale { item } => {
                format!(r#"{{"item":"{item}","err":"{}"}}"#, v.code())
            }
            other => format!(r#"{{"err":"{}"}}"#, other.code()),
        };
        let got = serde_json::from_str::<Reply<serde_json::Value>>(&json).unwrap();
        assert_eq!(got.into_result().unwrap_err(), v, "{json}");
    }
}

#[test]
fn lua_lists_and_counts_decode_as_cjson_writes_them() {
    #[derive(serde::Deserialize)]
    struct T {
        #[serde(deserialize_with = "lua_list")]
        list: Vec<u64>,
        #[serde(deserialize_with = "lua_count")]
        n: u64,
    }
    let t: T = serde_json::from_str(r#"{"list":{},"n":"1234567890123456789"}"#).unwrap();
    assert!(t.list.is_empty());
    assert_eq!(t.n, 1_234_567_890_123_456_789);
    let t: T = serde_json::from_str(r#"{"list":[1,2],"n":3}"#).unwrap();
    assert_eq!((t.list, t.n), (vec![1, 2], 3));
    let t: T = serde_json::from_str(r#"{"list":[],"n":"1.5e3"}"#).unwrap();
    assert_eq!(t.n, 1500);
    // A result that is an array is never read as a refusal, whatever its items are called.
    let r: Reply<Vec<String>> = serde_json::from_str(r#"["blocked"]"#).unwrap();
    assert_eq!(r.into_result().unwrap(), ["blocked"]);
    // A batch as claim answers it; an empty one as cjson writes it.
    let raw = r#"[["err","b"],{"wait_ms":5,"err":"rate_limited"}]"#;
    let replies = serde_json::from_str::<Reply<Batch<Reply<Vec<String>>>>>(raw);
    let Batch(replies) = replies.unwrap().into_result().unwrap();
    let replies: Vec<_> = replies.into_iter().map(Reply::into_result).collect();
    assert_eq!(
        replies,
        [
            Ok(vec!["err".to_string(), "b".to_string()]),
            Err(Refusal::RateLimited { wait_ms: 5 })
        ]
    );
    let Batch(none) = serde_json::from_str::<Batch<Reply<Vec<String>>>>("{}").unwrap();
    assert!(none.is_empty());
    // An object without `err` is a result.
    let r: Reply<serde_json::Value> = serde_json::from_str(r#"{"counted":1}"#).unwrap();
    assert_eq!(r.into_result().unwrap()["counted"], 1);
}

#[test]
fn each_typed_key_set_is_its_scripts_header_in_order() {
    let k = crate::keys::Keys::new("t").project("p");
    let scripts = Scripts::new();
    let sets: Vec<(&LuaScript, Vec<String>)> = vec![
        (&scripts.claim, k.claim_keys()),
        (&scripts.done, k.done_keys()),
        (&scripts.fold, k.fold_keys("2026-11")),
        (&scripts.release, k.release_keys("todo")),
        (&scripts.release_items, k.release_items_keys()),
        (&scripts.add_items, k.add_items_keys()),
        (&scripts.backfeed, k.backfeed_keys()),
        (&scripts.item_status, k.item_status_keys()),
        (&scripts.snapshot, k.snapshot_keys()),
        (&scripts.recount, k.recount_keys()),
        (&scripts.places, k.places_keys()),
        (&scripts.clear_queue, k.clear_queue_keys()),
        (&scripts.move_items, k.queue_order_keys()),
        (&scripts.shuffle, k.queue_order_keys()),
        (&scripts.resolve_failed, k.resolve_failed_keys()),
        (&scripts.retire_shards, k.retire_shards_keys()),
        (
            &scripts.offload_commit,
            k.offload_commit_keys(k.queue("todo")),
        ),
        (&scripts.refill, k.refill_keys("todo")),
    ];
    for (script, keys) in sets {
        let declared: Vec<&str> = header_of(script.source)
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("KEYS["))
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        assert_eq!(declared.len(), keys.len(), "script {}", script.name);
        for (i, (name, key)) in declared.iter().zip(&keys).enumerate() {
            let suffix = key.strip_prefix(k.prefix()).unwrap_or(key);
            // `u:month` is the month's own key; `todo` and `the` a queue part's.
            let fits = suffix == *name
                || suffix.starts_with(&format!("{name}:"))
                || (*name == "the" && suffix == "todo");
            assert!(
                fits,
                "script {}: KEYS[{}] is {name}, the set gives {key}",
                script.name,
                i + 1
            );
        }
    }
}

#[test]
fn each_script_gets_only_the_prelude_entries_it_names_in_as_many_lines() {
    let claim = prelude_for(include_str!("../queue/lua/claim.lua"));
    assert!(claim.contains("decay_threshold = 0.005"), "{claim}");
    assert!(
        claim.contains("rate = 'rate'") && !claim.contains("banner = 'banner'"),
        "{claim}"
    );
    // What _lib.lua names is in every script's.
    let login = prelude_for(include_str!("../people/lua/login_attempt.lua"));
    assert!(
        login.contains(&format!("personal = '{PERSONAL}'")),
        "{login}"
    );
    assert!(
        login.contains("stamp = 'stamp'") && !login.contains("banner = 'banner'"),
        "{login}"
    );
    for s in Scripts::new().all() {
        assert_eq!(
            compose_header(&prelude_for(s.source)).lines().count(),
            header_lines(),
            "script {}",
            s.name
        );
    }
}
