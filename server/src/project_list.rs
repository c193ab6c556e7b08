//! The Warrior HQ project list as served (`GET /projects.json`, `POST /api/update.json`):
//! generated from the projects, each with its settings and Warrior listing, plus the list-level
//! fields saved in the panel (`warrior.seesaw_version`, `broadcast_message`,
//! `tracker_banner_html`, and entries for projects on other trackers). `auto_project` is chosen
//! here: the pinned project while it serves, else the listed active project with work to hand
//! out and the lowest niceness (`priority`, then slug), among the projects that would serve the
//! Warrior's claims: a Warrior that sends a pipeline token (`Authorization: Bearer`) gets the
//! choice for that pipeline's tags; without one, projects that require a token are skipped.
//!
//! [`refresh`] runs every few seconds in every process: it records each project's lifecycle
//! changes ([`crate::store::projects::Projects::record_state`]) and each change of `auto_project`, with an
//! audit entry by `tracker`. Several processes record each change once (`SET ... GET`).

use crate::store::{may_serve, now_ms, Actor, Pipeline, Store, StoreResult};
use app::model::admin::{AutoCandidate, AutoProject, Listing};
use serde_json::{json, Map, Value};
use std::collections::HashSet;

/// How often [`refresh`] runs.
pub const REFRESH: std::time::Duration = std::time::Duration::from_secs(5);

/// What `projects.json` serves before anything was saved.
pub const EMPTY_LIST: &str = r#"{"warrior":{"seesaw_version":"0.10.3"},"projects":[]}"#;

/// The audit name of what the tracker does by itself.
pub const TRACKER_ACTOR: &str = "tracker";

/// One project of the tracker as the list sees it.
#[derive(Clone, Debug)]
pub struct Project {
    /// Slug.
    pub slug: String,
    /// Niceness (lower first).
    pub priority: i64,
    /// Lifecycle state.
    pub state: String,
    /// Items waiting.
    pub todo: u64,
    /// Claims need a pipeline token.
    pub require_token: bool,
    /// The pipeline tags it serves (empty: any).
    pub tags: Vec<String>,
    /// Its `projects.json` entry, when it is listed.
    pub entry: Option<Value>,
    /// Its weight among today's "auto" Warriors (0: none).
    pub weight: u32,
}

/// The list before `auto_project` is chosen.
pub struct Generated {
    /// The document without `auto_project`.
    pub doc: Map<String, Value>,
    /// Every project, best first for `auto_project`.
    pub projects: Vec<Project>,
    /// The pinned project.
    pub pin: Option<String>,
}

impl Generated {
    /// The project "auto" Warriors of `pipeline` (`None`: without a token) get: only projects
    /// that would serve its claims ([`crate::store::may_serve`]).
    pub fn choose(&self, pipeline: Option<&Pipeline>) -> Option<String> {
        let serves = |p: &Project| may_serve(p.require_token, &p.tags, pipeline);
        if let Some(pin) = self.pin_serving(pipeline) {
            return Some(pin.to_string());
        }
        self.projects
            .iter()
            .find(|p| p.entry.is_some() && p.state == "active" && p.todo > 0 && serves(p))
            .map(|p| p.slug.clone())
    }

    /// The pinned project, while it hands out work and would serve `pipeline`'s claims.
    fn pin_serving(&self, pipeline: Option<&Pipeline>) -> Option<&str> {
        let pin = self.pin.as_deref()?;
        self.projects
            .iter()
            .find(|p| p.slug == pin)
            .filter(|p| matches!(p.state.as_str(), "active" | "draining"))
            .filter(|p| may_serve(p.require_token, &p.tags, pipeline))
            .map(|p| p.slug.as_str())
    }

    /// Today's Warriors' weighted choice for `pipeline` (`auto_projects_config`): the pinned
    /// project alone while it serves; else every listed active project with work to hand out,
    /// a weight above 0, and that would serve the Warrior's claims, in the list's order. Empty:
    /// the Warrior falls back to `auto_project`.
    pub fn weights(&self, pipeline: Option<&Pipeline>) -> Vec<(String, u32)> {
        let serves = |p: &Project| may_serve(p.require_token, &p.tags, pipeline);
        if let Some(pin) = self.pin_serving(pipeline) {
            return vec![(pin.to_string(), 1)];
        }
        self.projects
            .iter()
            .filter(|p| {
                p.entry.is_some() && p.weight > 0 && p.state == "active" && p.todo > 0 && serves(p)
            })
            .map(|p| (p.slug.clone(), p.weight))
            .collect()
    }

    /// The listed projects in the order of the choice (for the panel).
    pub fn auto_project(&self, chosen: Option<String>) -> AutoProject {
        AutoProject {
            chosen,
            weights: self.weights(None),
            pinned: self.pin.clone(),
            candidates: self
                .projects
                .iter()
                .filter(|p| p.entry.is_some())
                .map(|p| AutoCandidate {
                    slug: p.slug.clone(),
                    priority: p.priority,
                    state: p.state.clone(),
                    todo: p.todo,
                    weight: p.weight,
                })
                .collect(),
        }
    }

    /// The document with `auto_project` and, when any project is weighted, today's
    /// Warriors' `auto_projects_config` (`[{"project", "weight"}]`; entries saved by hand in
    /// the list for projects of other trackers follow ours).
    pub fn document(mut self, auto: Option<String>, weights: Vec<(String, u32)>) -> Value {
        self.doc.insert(
            "auto_project".into(),
            auto.map_or(Value::Null, Value::String),
        );
        let ours: HashSet<&str> = self.projects.iter().map(|p| p.slug.as_str()).collect();
        let mut config: Vec<Value> = weights
            .into_iter()
            .map(|(project, weight)| json!({ "project": project, "weight": weight }))
            .collect();
        if self.pin.is_none() || config.is_empty() {
            if let Some(Value::Array(saved)) = self.doc.get("auto_projects_config") {
                config.extend(
                    saved
                        .iter()
                        .filter(|e| {
                            e["project"].as_str().is_some_and(|n| !ours.contains(n))
                                && e["weight"].as_f64().is_some_and(|w| w > 0.0)
                        })
                        .cloned(),
                );
            }
        }
        if config.is_empty() {
            self.doc.remove("auto_projects_config");
        } else {
            self.doc
                .insert("auto_projects_config".into(), Value::Array(config));
        }
        Value::Object(self.doc)
    }
}

/// A project's `projects.json` entry, or `None` when it is not listed (switched off, or no
/// repository).
pub fn entry(
    slug: &str,
    title: &str,
    description: &str,
    state: &str,
    priority: i64,
    listing: &Listing,
    base: &str,
) -> Option<Value> {
    // Listed, with its repository approved by a global admin.
    if !listing.offered() {
        return None;
    }
    // Saved by an earlier version, before the rule: not sent to the fleet until mended.
    if let Some(why) = crate::ops::listing::url_problem("repository", listing.served_repository()?)
    {
        tracing::warn!(
            slug,
            why,
            "a listed project's repository is refused; left out of the list"
        );
        return None;
    }
    let mut e = Map::new();
    e.insert("name".into(), slug.into());
    e.insert("title".into(), title.into());
    e.insert("description".into(), description.into());
    let repository = listing.served_repository().unwrap_or_default();
    e.insert("repository".into(), repository.into());
    for (field, value) in [
        ("logo", &listing.logo),
        ("marker_html", &listing.marker_html),
        ("deadline", &listing.deadline),
        ("host", &listing.host),
    ] {
        let refused = field == "logo" && crate::ops::listing::url_problem(field, value).is_some();
        if !value.is_empty() && !refused {
            e.insert(field.into(), value.as_str().into());
        }
    }
    e.insert("leaderboard".into(), format!("{base}/{slug}/").into());
    if let Some(ll) = listing.lat_lng {
        e.insert("lat_lng".into(), json!(ll));
    }
    e.insert("state".into(), state.into());
    e.insert("priority".into(), priority.into());
    Some(Value::Object(e))
}

/// Reads every project and the saved list-level fields; `base` is the tracker's address for the
/// leaderboard links.
pub async fn generate(store: &Store, base: &str) -> StoreResult<Generated> {
    let saved = store.fleet().warrior_projects().await?;
    let saved: Value = saved
        .as_deref()
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_else(|| serde_json::from_str(EMPTY_LIST).unwrap_or_default());
    let mut doc = match saved {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    doc.remove("auto_project");
    let external = match doc.remove("projects") {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    let mut slugs = store.projects().project_slugs().await?;
    slugs.sort();
    let mut projects = Vec::with_capacity(slugs.len());
    for slug in &slugs {
        let Some((board, _)) = store.figures().snapshot(slug, 0, 0).await? else {
            continue;
        };
        let extras = store.people().project_extras(slug).await?;
        let priority = extras
            .get("priority")
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let listing: Listing = extras
            .get("listing")
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_default();
        let description = extras.get("description").map_or("", String::as_str);
        let settings = store.projects().project(slug).await?.unwrap_or_default();
        let entry = entry(
            slug,
            &board.title,
            description,
            &board.state,
            priority,
            &listing,
            base,
        );
        projects.push(Project {
            slug: slug.clone(),
            priority,
            state: board.state,
            todo: board.counts.todo,
            require_token: settings.require_token,
            tags: settings.tags.clone(),
            entry,
            weight: listing.weight,
        });
    }
    // The order of the choice: the global admins' priority, then their weight among auto
    // Warriors (higher first); only then the slug, among projects whose listing a global admin
    // approved (`Listing::offered`).
    projects.sort_by(|a, b| {
        a.priority
            .cmp(&b.priority)
            .then(b.weight.cmp(&a.weight))
            .then(a.slug.cmp(&b.slug))
    });
    let ours: HashSet<&str> = slugs.iter().map(String::as_str).collect();
    let mut list: Vec<Value> = projects.iter().filter_map(|p| p.entry.clone()).collect();
    // Entries saved by hand for projects of other trackers follow ours.
    list.extend(
        external
            .into_iter()
            .filter(|e| !e["name"].as_str().is_some_and(|n| ours.contains(n))),
    );
    doc.insert("projects".into(), Value::Array(list));
    Ok(Generated {
        doc,
        projects,
        pin: store.projects().auto_pin().await?,
    })
}

/// Audit entries of `auto_project` changes one process writes per install: a burst of
/// [`AUTO_AUDIT_BURST`], then one per [`AUTO_AUDIT_EVERY`] (each saying how many changes it
/// stands for). Changes of a normal day are all written; a project flapping between dry and
/// full (claims emptying it, adds refilling it) cannot flush the audit log.
const AUTO_AUDIT_BURST: f64 = 5.0;
/// See [`AUTO_AUDIT_BURST`].
const AUTO_AUDIT_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Per install (key namespace): entries this process may still write, as of when, and the
/// changes not written since the last entry.
type AuditAllowance = std::collections::HashMap<String, (f64, std::time::Instant, u64)>;
static AUTO_AUDIT: std::sync::LazyLock<std::sync::Mutex<AuditAllowance>> =
    std::sync::LazyLock::new(Default::default);

/// Whether an audit entry of a change of install `ns` may be written now; if so, how many
/// changes went unwritten before it.
fn auto_audit_due(ns: &str) -> Option<u64> {
    let mut all = AUTO_AUDIT.lock().unwrap_or_else(|e| e.into_inner());
    if all.len() > 1000 {
        all.clear();
    }
    let now = std::time::Instant::now();
    let (tokens, at, skipped) = all
        .entry(ns.to_string())
        .or_insert((AUTO_AUDIT_BURST, now, 0));
    let earned = now.duration_since(*at).as_secs_f64() / AUTO_AUDIT_EVERY.as_secs_f64();
    *tokens = (*tokens + earned).min(AUTO_AUDIT_BURST);
    *at = now;
    if *tokens >= 1.0 {
        *tokens -= 1.0;
        Some(std::mem::take(skipped))
    } else {
        *skipped += 1;
        None
    }
}

/// Records `chosen` as `auto_project`, with an audit entry when that is a change (at most one
/// a minute per process; the entry says how many changes it stands for).
pub async fn record_auto(
    store: &Store,
    generated: &Generated,
    chosen: Option<&str>,
) -> StoreResult<()> {
    if let Some(old) = store.projects().record_auto(chosen).await? {
        let Some(skipped) = auto_audit_due(&store.keys().projects()) else {
            return Ok(());
        };
        let why = match (&old, &generated.pin) {
            (_, Some(pin)) if Some(pin.as_str()) == chosen => "pinned".to_string(),
            (Some(o), _) => match generated.projects.iter().find(|p| &p.slug == o) {
                Some(p) if p.entry.is_none() => format!("{o} is no longer listed"),
                Some(p) if p.state != "active" => format!("{o} is {}", p.state),
                Some(_) => format!("{} comes first", chosen.unwrap_or("none")),
                None => format!("{o} is gone"),
            },
            (None, _) => "work to hand out".to_string(),
        };
        let mut detail = format!(
            "{} → {}: {why}",
            old.as_deref().unwrap_or("none"),
            chosen.unwrap_or("none")
        );
        if skipped > 0 {
            detail.push_str(&format!(" ({skipped} earlier changes not logged)"));
        }
        let actor = Actor {
            name: TRACKER_ACTOR.into(),
            token: None,
        };
        actor
            .record(
                store,
                "auto_project.change",
                chosen.unwrap_or(""),
                1,
                detail,
            )
            .await?;
    }
    Ok(())
}

/// The list without a token, made at most once a second per install and base URL, for every
/// Warrior HQ update of that second (thousands of warriors update every 10 minutes).
static ANONYMOUS: std::sync::LazyLock<moka::future::Cache<String, String>> =
    std::sync::LazyLock::new(|| {
        moka::future::Cache::builder()
            .time_to_live(std::time::Duration::from_secs(1))
            .max_capacity(1_000)
            .build()
    });

/// [`body`], the anonymous list from a cache of one second.
pub async fn body_cached(
    store: &Store,
    base: &str,
    pipeline: Option<&Pipeline>,
) -> StoreResult<String> {
    if pipeline.is_some() {
        return body(store, base, pipeline).await;
    }
    let key = format!("{}\n{base}", store.keys().projects());
    ANONYMOUS
        .try_get_with(key, body(store, base, None))
        .await
        .map_err(|e| match &*e {
            crate::store::StoreError::Full => crate::store::StoreError::Full,
            other => crate::store::StoreError::Unavailable(other.to_string()),
        })
}

/// The list as a Warrior of `pipeline` gets it (`None`: without a token; that choice is the
/// one recorded).
pub async fn body(store: &Store, base: &str, pipeline: Option<&Pipeline>) -> StoreResult<String> {
    let generated = generate(store, base).await?;
    let chosen = generated.choose(pipeline);
    if pipeline.is_none() {
        // A read: the list is served even when recording fails (a full Redis refuses writes).
        if let Err(e) = record_auto(store, &generated, chosen.as_deref()).await {
            tracing::debug!(error = %e, "recording auto_project; the refresh tries again");
        }
    }
    let weights = generated.weights(pipeline);
    Ok(generated.document(chosen, weights).to_string())
}

/// Records every project's lifecycle changes and `auto_project`'s.
pub async fn refresh(store: &Store, base: &str) -> StoreResult<()> {
    let generated = generate(store, base).await?;
    let now = now_ms();
    for p in &generated.projects {
        match store.projects().record_state(&p.slug, &p.state, now).await {
            // Destroyed since the list was read: nothing to record.
            Ok(_) | Err(crate::store::StoreError::NoProject) => {}
            Err(e) => return Err(e),
        }
    }
    let chosen = generated.choose(None);
    record_auto(store, &generated, chosen.as_deref()).await
}

/// Runs [`refresh`] every [`REFRESH`] until `closing`; `base` as for [`generate`].
pub fn start_refreshing(store: Store, closing: tokio_util::sync::CancellationToken, base: String) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REFRESH);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = closing.cancelled() => break,
                _ = tick.tick() => {}
            }
            if let Err(e) = refresh(&store, &base).await {
                tracing::debug!(error = %e, "recording project states; retried in 5 s");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_project_changes_are_audited_in_a_burst_then_once_a_minute_and_counted() {
        for _ in 0..5 {
            assert_eq!(auto_audit_due("t1"), Some(0), "a normal day's changes");
        }
        assert_eq!(auto_audit_due("t1"), None);
        assert_eq!(auto_audit_due("t1"), None);
        assert_eq!(auto_audit_due("t2"), Some(0), "installs apart");
        if let Some((_, at, _)) = AUTO_AUDIT.lock().unwrap().get_mut("t1") {
            *at -= AUTO_AUDIT_EVERY;
        }
        assert_eq!(
            auto_audit_due("t1"),
            Some(2),
            "a minute on: one, counting two"
        );
        assert_eq!(auto_audit_due("t1"), None);
    }
}
