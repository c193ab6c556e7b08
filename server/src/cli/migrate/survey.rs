//! The survey of `tracker migrate`: every key of the old database by project and kind, with what
//! becomes of it, and the keys the old tracker does not write.

use crate::cli::stdout::outln;

use super::{old_err, source, CliError, Fate, Source, Steps};
use std::collections::{BTreeMap, HashMap};

/// What the survey found: per project (or `""`, global), per kind, (fate, keys, elements).
pub(super) type Survey = BTreeMap<String, BTreeMap<&'static str, (Fate, u64, u64)>>;

/// The survey, and the keys of each project by kind that the import walks.
pub(super) struct Found {
    pub(super) survey: Survey,
    pub(super) personal: HashMap<String, Vec<String>>,
    pub(super) dl_charts: HashMap<String, Vec<String>>,
    pub(super) logs: HashMap<String, Vec<String>>,
    pub(super) unknown: Vec<String>,
    pub(super) unknown_count: u64,
    /// Keys the import reads that hold another type than the old tracker wrote: (its project
    /// or `""`, key, its type, the type written).
    pub(super) wrong_types: Vec<(String, String, String, &'static str)>,
}

/// Every key of the old database, by project and kind.
pub(super) async fn survey(
    old: &Source,
    projects: &BTreeMap<String, serde_json::Value>,
) -> Result<Found, CliError> {
    let mut found = Found {
        survey: Survey::new(),
        personal: HashMap::new(),
        dl_charts: HashMap::new(),
        logs: HashMap::new(),
        unknown: Vec::new(),
        unknown_count: 0,
        wrong_types: Vec::new(),
    };
    let steps = Steps::new("survey");
    let total = old.dbsize().await.map_err(old_err)?;
    let (mut cursor, mut seen) = ("0".to_string(), 0);
    loop {
        let (next, names) = old.page("SCAN", "*", &cursor).await.map_err(old_err)?;
        let known: Vec<&str> = names
            .iter()
            .filter(|key| place(projects, key).is_some())
            .map(String::as_str)
            .collect();
        let sizes = old.sizes(&known).await.map_err(old_err)?;
        let mut sizes = known.into_iter().zip(sizes).peekable();
        for key in &names {
            let size = match sizes.peek() {
                Some((k, (kind, n))) if *k == key.as_str() => Some((kind.clone(), *n)),
                _ => None,
            };
            if size.is_some() {
                sizes.next();
            }
            survey_key(projects, &mut found, key, size);
        }
        seen += names.len() as u64;
        steps.at(seen, total);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    steps.finish();
    Ok(found)
}

/// Where `key` belongs: its project (`""`: global), its name there, its kind and fate; `None`
/// for a key the old tracker does not write.
fn place<'a>(
    projects: &BTreeMap<String, serde_json::Value>,
    key: &'a str,
) -> Option<(&'a str, &'a str, (&'static str, Fate))> {
    match key.split_once(':') {
        Some((slug, rest)) if projects.contains_key(slug) => {
            source::project_key(rest).map(|kind| (slug, rest, kind))
        }
        _ => source::global_key(key).map(|kind| ("", key, kind)),
    }
}

/// Counts `key` (of `size` elements when it is known) in the survey, or among the unknown
/// keys, and keeps the names the import walks.
fn survey_key(
    projects: &BTreeMap<String, serde_json::Value>,
    found: &mut Found,
    key: &str,
    size: Option<(String, u64)>,
) {
    let (Some((slug, rest, (kind, fate))), Some((written, n))) = (place(projects, key), size)
    else {
        found.unknown_count += 1;
        if found.unknown.len() < 50 {
            found.unknown.push(key.to_string());
        }
        return;
    };
    if let Some(expected) = source::written_as(kind).filter(|e| *e != written) {
        if written != "none" {
            found
                .wrong_types
                .push((slug.to_string(), key.to_string(), written, expected));
        }
    }
    let entry = found
        .survey
        .entry(slug.to_string())
        .or_default()
        .entry(kind)
        .or_insert((fate, 0, 0));
    entry.1 += 1;
    entry.2 += n;
    let list = match kind {
        "personal queues" => &mut found.personal,
        "downloader charts" => &mut found.dl_charts,
        "log" | "log archives" => &mut found.logs,
        _ => return,
    };
    list.entry(slug.to_string())
        .or_default()
        .push(rest.to_string());
}

pub(super) fn print_survey(found: &Found, only: &[String]) {
    for (slug, kinds) in &found.survey {
        if !slug.is_empty() && !only.is_empty() && !only.contains(slug) {
            continue;
        }
        outln!("{}", if slug.is_empty() { "global" } else { slug });
        for (kind, (fate, keys, n)) in kinds {
            let what = match fate {
                Fate::Carried => "carried over".to_string(),
                Fate::File => "written to files".to_string(),
                Fate::NotCarried(why) => format!("not carried: {why}"),
                Fate::Transient => "not carried (short-lived)".to_string(),
            };
            outln!("  {kind:<22} {keys:>7} keys {n:>12} elements  {what}");
        }
    }
    for (slug, key, written, expected) in &found.wrong_types {
        if !slug.is_empty() && !only.is_empty() && !only.contains(slug) {
            continue;
        }
        outln!("not the old tracker's layout: {key} is a {written}, the universal tracker wrote a {expected}");
    }
    if found.unknown_count > 0 {
        outln!(
            "{} keys the old tracker does not write (not carried):",
            found.unknown_count
        );
        for key in &found.unknown {
            outln!("  {key}");
        }
    }
}
