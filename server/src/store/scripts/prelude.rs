//! The prelude every script starts with: the names Lua shares with Rust, generated from
//! [`crate::keys`] and the settings codec (see [`super`]'s doc).

use super::LIB;
use crate::keys::{Counter, BACKFEED, PERSONAL, QUEUES, REDO, SECONDARY, TODO};
use app::model::admin::{Kind, DERIVED_FIELDS, SETTING_FIELDS};

/// The prelude's tables, each `(its Lua name, its entries as (name, Lua value))`: the names Lua
/// shares with Rust, generated from [`crate::keys`] and the settings codec.
fn prelude_tables() -> [(&'static str, Vec<(String, String)>); 5] {
    let quoted = |v: &str| format!("'{v}'");
    let queues = [
        ("todo", TODO),
        ("backfeed", BACKFEED),
        ("secondary", SECONDARY),
        ("redo", REDO),
        ("personal", PERSONAL),
    ];
    [
        (
            "Q",
            queues
                .iter()
                .map(|(name, q)| (name.to_string(), quoted(q)))
                .collect(),
        ),
        (
            "ST",
            Counter::ALL
                .iter()
                .map(|c| (c.lua_name().to_string(), quoted(c.code())))
                .collect(),
        ),
        (
            "K",
            crate::keys::DERIVED
                .iter()
                .map(|(name, stem)| (name.to_string(), quoted(stem)))
                .collect(),
        ),
        ("SET", setting_names()),
        ("SET_DEFAULT", setting_defaults()),
    ]
}

/// The prelude with every entry of its tables: what [`prelude_for`] gives a script that used
/// them all.
pub fn prelude() -> String {
    render_prelude(|_, _| true)
}

/// The prelude of one script (`source`) run alone with `EVAL`: each table with only the entries
/// the script or [`LIB`] names (`Q.todo`, `SET.rate`), since `EVAL` builds the tables at every
/// call (a table of 30 entries costs about 1 µs a call). One line per table whatever it holds,
/// so every script's header has the same number of lines ([`super::header_lines`]).
pub fn prelude_for(source: &str) -> String {
    render_prelude(|table, name| names(LIB, table, name) || names(source, table, name))
}

/// Whether Lua `code` names `table.name` (as a whole word: not `XQ.todo`, not `Q.todos`).
fn names(code: &str, table: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let needle = format!("{table}.{name}");
    code.match_indices(&needle).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + needle.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

fn render_prelude(keep: impl Fn(&str, &str) -> bool) -> String {
    let mut out = String::from(
        "-- _prelude: names shared with Rust, generated from keys.rs and the settings codec \
         (store::scripts::prelude).\n",
    );
    for (i, (table, entries)) in prelude_tables().iter().enumerate() {
        let kept: Vec<String> = entries
            .iter()
            .filter(|(name, _)| keep(table, name))
            .map(|(name, value)| format!("{name} = {value}"))
            .collect();
        out.push_str(&format!("local {table} = {{ {} }}\n", kept.join(", ")));
        if i == 0 {
            out.push_str(&format!("local DEFAULT_QUEUES = '{}'\n", QUEUES.join(",")));
        }
    }
    out
}

/// `SET`: the `meta` hash's fields by their Lua name, the settings (named as in the codec,
/// [`SETTING_FIELDS`]) and the fields derived from them ([`DERIVED_FIELDS`]).
fn setting_names() -> Vec<(String, String)> {
    SETTING_FIELDS
        .iter()
        .map(|f| (f.name.to_string(), format!("'{}'", f.name)))
        .chain(
            DERIVED_FIELDS
                .iter()
                .map(|(name, field)| (name.to_string(), format!("'{field}'"))),
        )
        .collect()
}

/// `SET_DEFAULT`: what a project lacking a setting has, for each setting whose default is not
/// empty or 0 (numbers as numbers, texts quoted).
fn setting_defaults() -> Vec<(String, String)> {
    SETTING_FIELDS
        .iter()
        .filter(|f| !["", "0"].contains(&f.default))
        .filter_map(|f| match f.kind {
            Kind::Int | Kind::Float => Some((f.name.to_string(), f.default.to_string())),
            Kind::Text => Some((f.name.to_string(), format!("'{}'", f.default))),
            Kind::List | Kind::Flag | Kind::Json => None,
        })
        .collect()
}
