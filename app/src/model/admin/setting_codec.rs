//! One codec per setting: each field of [`Settings`] is named, typed, defaulted, labelled and
//! encoded here once. The server writes and reads the project's `meta` hash with it
//! ([`SettingField::encode`], [`decode_meta`]), the panel draws and parses its plain fields
//! with it ([`SettingField::label`], [`SettingField::panel_text`], [`SettingField::set_text`]),
//! and the Lua scripts read the names and defaults from a prelude generated from it (`SET` and
//! `SET_DEFAULT`, see the server's `store::scripts::prelude`). The codec parses each setting's
//! type; the rules beyond it (ranges, patterns, rules between settings) are the server's, one
//! check per setting of this table (`ops::settings::CHECKS`, a test requires each).

use super::{PatternLimit, Settings};
use std::collections::BTreeMap;

/// How a setting is written in the `meta` hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// As it is.
    Text,
    /// Comma-separated, no empty entries.
    List,
    /// A finite number, as Rust prints it.
    Float,
    /// A whole number from 0.
    Int,
    /// `1` or `0`.
    Flag,
    /// JSON.
    Json,
}

/// One setting.
pub struct SettingField {
    /// Its name: the `meta` hash field, the JSON key and `tracker project set`'s `KEY`.
    pub name: &'static str,
    /// How it is written.
    pub kind: Kind,
    /// What a project that lacks the field has (encoded), and what a new project starts with
    /// (except `title` and `domains`, which creation sets).
    pub default: &'static str,
    /// The panel's label when the panel shows it as a plain text field; `None` when the panel
    /// has a control of its own for it (a switch, a choice, a list editor).
    pub label: Option<&'static str>,
    get: fn(&Settings) -> String,
    set: fn(&mut Settings, &str) -> Result<(), String>,
}

impl SettingField {
    /// The setting of `s`, as the `meta` hash holds it.
    pub fn encode(&self, s: &Settings) -> String {
        (self.get)(s)
    }

    /// Sets the setting of `s` from its encoded form `raw`, or says why `raw` is not one.
    pub fn decode(&self, s: &mut Settings, raw: &str) -> Result<(), String> {
        (self.set)(s, raw)
    }

    /// The setting of `s` as the panel's text field shows it (lists with `, `, numbers as
    /// JSON writes them).
    pub fn panel_text(&self, s: &Settings) -> String {
        let raw = self.encode(s);
        match self.kind {
            Kind::List => raw.split(',').collect::<Vec<_>>().join(", "),
            Kind::Float => raw
                .parse::<f64>()
                .map(|f| serde_json::Value::from(f).to_string())
                .unwrap_or(raw),
            _ => raw,
        }
    }

    /// Sets the setting of `s` from the panel's text (trimmed; a list's entries trimmed), or
    /// says why not, naming the field by its label.
    pub fn set_text(&self, s: &mut Settings, text: &str) -> Result<(), String> {
        let text = text.trim();
        let normal = match self.kind {
            Kind::List => text
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .collect::<Vec<_>>()
                .join(","),
            _ => text.to_string(),
        };
        self.decode(s, &normal)
            .map_err(|why| format!("{}: {why}.", self.label.unwrap_or(self.name)))
    }
}

/// Fields of the `meta` hash that are not settings but follow from them (written by the
/// server when it saves settings, or once at creation), by their Lua name: the claim order,
/// whether queues are scored for random order, the stem of each pattern limit's
/// `pl:NAME` ("rate burst"), and the stamp: a token written anew in the same command as any
/// of the others or a setting (the scripts keep the settings they read while it holds).
pub const DERIVED_FIELDS: [(&str, &str); 4] = [
    ("queues", "queues"),
    ("shuffled", "shuffled"),
    ("pattern_limit", "pl:"),
    ("stamp", "stamp"),
];

fn list(raw: &str) -> Vec<String> {
    raw.split(',')
        .filter(|e| !e.is_empty())
        .map(String::from)
        .collect()
}

fn float(raw: &str) -> Result<f64, String> {
    raw.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .ok_or_else(|| "not a number".to_string())
}

fn whole(raw: &str) -> Result<u64, String> {
    raw.parse::<u64>()
        .map_err(|_| "not a whole number".to_string())
}

fn flag(raw: &str) -> Result<bool, String> {
    match raw {
        "1" => Ok(true),
        "0" | "" => Ok(false),
        _ => Err("1 or 0".into()),
    }
}

/// A [`SettingField`] for `Settings.$key`.
macro_rules! setting {
    ($key:ident, Text, $default:expr, $label:expr) => {
        SettingField {
            name: stringify!($key),
            kind: Kind::Text,
            default: $default,
            label: $label,
            get: |s| s.$key.clone(),
            set: |s, raw| {
                s.$key = raw.to_string();
                Ok(())
            },
        }
    };
    ($key:ident, List, $default:expr, $label:expr) => {
        SettingField {
            name: stringify!($key),
            kind: Kind::List,
            default: $default,
            label: $label,
            get: |s| s.$key.join(","),
            set: |s, raw| {
                s.$key = list(raw);
                Ok(())
            },
        }
    };
    ($key:ident, Float, $default:expr, $label:expr) => {
        SettingField {
            name: stringify!($key),
            kind: Kind::Float,
            default: $default,
            label: $label,
            get: |s| s.$key.to_string(),
            set: |s, raw| {
                s.$key = float(raw)?;
                Ok(())
            },
        }
    };
    ($key:ident, Int, $default:expr, $label:expr) => {
        SettingField {
            name: stringify!($key),
            kind: Kind::Int,
            default: $default,
            label: $label,
            get: |s| s.$key.to_string(),
            set: |s, raw| {
                s.$key = whole(raw)?;
                Ok(())
            },
        }
    };
    ($key:ident, Flag, $default:expr, $label:expr) => {
        SettingField {
            name: stringify!($key),
            kind: Kind::Flag,
            default: $default,
            label: $label,
            get: |s| if s.$key { "1" } else { "0" }.to_string(),
            set: |s, raw| {
                s.$key = flag(raw)?;
                Ok(())
            },
        }
    };
    ($key:ident, Json, $default:expr, $label:expr) => {
        SettingField {
            name: stringify!($key),
            kind: Kind::Json,
            default: $default,
            label: $label,
            get: |s| serde_json::to_string(&s.$key).unwrap_or_default(),
            set: |s, raw| {
                s.$key = serde_json::from_str(raw).map_err(|e| e.to_string())?;
                Ok(())
            },
        }
    };
}

/// Every setting; those with a label in the order the panel shows them.
pub const SETTING_FIELDS: [SettingField; 30] = [
    setting!(title, Text, "", Some("Title")),
    setting!(banner, Text, "", Some("Banner (a message on the pages)")),
    setting!(domains, List, "", Some("Byte domains (comma-separated)")),
    setting!(
        item_pattern,
        Text,
        "",
        Some("Valid item pattern (regular expression; empty: rescue form closed)")
    ),
    setting!(
        min_version,
        Text,
        "",
        Some("Minimum script version (empty: any)")
    ),
    setting!(
        rate,
        Float,
        "0",
        Some("Rate limit (items per second; 0: none)")
    ),
    setting!(burst, Float, "0", Some("Burst (items at once)")),
    setting!(
        dl_max_claims,
        Int,
        "0",
        Some("Max claims per downloader (0: any)")
    ),
    setting!(claims_limit, Int, "0", Some("Claims limit (0: none)")),
    setting!(
        reclaim_ttl,
        Int,
        "0",
        Some("Reclaim TTL (seconds; 0: never)")
    ),
    setting!(
        max_attempts,
        Int,
        "0",
        Some("Max attempts (0: never fail)")
    ),
    setting!(
        auto_block_ttl,
        Int,
        "86400",
        Some("Automatic block length (seconds)")
    ),
    setting!(
        bloom_capacity,
        Int,
        "1000000",
        Some("Bloom filter capacity (backfeed records)")
    ),
    setting!(
        backfeed_shards,
        List,
        "",
        Some("Backfeed shards always accepted (comma-separated)")
    ),
    setting!(
        shard_pattern,
        Text,
        "",
        Some("New backfeed shard names a call may make (regular expression, whole name; empty: any of 1-64 of A-Z a-z 0-9 _ . : -)")
    ),
    setting!(
        tags,
        List,
        "",
        Some("Pipeline tags: serve only pipelines carrying one (comma-separated; empty: any)")
    ),
    setting!(
        offload_keep,
        Int,
        "100000",
        Some("Done items kept in Redis (offload, discard: the rest go to disk)")
    ),
    setting!(
        queue_high,
        Int,
        "2000000",
        Some("Queue high-water mark (items a queue keeps in Redis; 0: no mark)")
    ),
    setting!(
        segment_items,
        Int,
        "50000",
        Some("Items per segment file on disk")
    ),
    setting!(
        log_keep,
        Int,
        "50000",
        Some("Completion log entries kept in Redis (older ones go to disk)")
    ),
    setting!(state, Text, "active", None),
    setting!(decay_factor, Float, "0", None),
    setting!(decay_threshold, Float, "0.005", None),
    setting!(fifo, Flag, "0", None),
    setting!(ignore_global_blocks, Flag, "0", None),
    setting!(require_token, Flag, "0", None),
    setting!(done_policy, Text, "keep", None),
    setting!(backfeed_key, Text, "", None),
    setting!(extra, Json, "{}", None),
    setting!(pattern_limits, Json, "[]", None),
];

/// The setting called `name`.
pub fn setting_field(name: &str) -> Option<&'static SettingField> {
    SETTING_FIELDS.iter().find(|f| f.name == name)
}

/// The settings of a project whose `meta` hash holds `meta`: each field decoded, and a field
/// that is missing or does not decode taking its default. (`state` and `backfeed_shards` need
/// more than their field; the server finishes them.)
pub fn decode_meta(meta: &BTreeMap<&str, &str>) -> Settings {
    let mut s = Settings::default();
    for field in &SETTING_FIELDS {
        let raw = meta.get(field.name).copied().unwrap_or(field.default);
        if field.decode(&mut s, raw).is_err() {
            let _ = field.decode(&mut s, field.default);
        }
    }
    s
}

/// The settings a new project starts with (before its title and domains are set).
pub fn default_settings() -> Settings {
    decode_meta(&BTreeMap::new())
}

/// A pattern limit's `pl:NAME` value in `meta`: "rate burst", the burst at least 1.
pub fn pattern_limit_value(p: &PatternLimit) -> String {
    format!("{} {}", p.rate, p.burst.max(1.0))
}
