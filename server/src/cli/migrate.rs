//! `tracker migrate`: a live universal tracker's database into this tracker.
//!
//! It reads the old Redis only, page by page (`SCAN`, `SSCAN`, `HSCAN`, `ZSCAN`, `LRANGE` of
//! 1,000), and writes each page in one step. First a survey: every key of the old database by
//! kind, with its elements and what becomes of it, and every key it does not know. Then per
//! project: created paused with its settings; the queues; the claims (same claimant, IP and
//! time; `out` members without a `claims` entry are claimed by `unknown`, as the old tracker
//! showed them); the done items; the totals and the downloaders' figures; the charts; blocks;
//! upload targets; the logs, written to files (moved into the completion log they would be
//! counted again). Then the accounts (their bcrypt hashes keep working: the first login
//! replaces each with argon2) and the global blocks; then each project is set active and
//! checked.
//!
//! An item is only added where the project does not know it yet, so a run again (or resumed,
//! `--resume`, from the checkpoint kept in this tracker's Redis after every page) changes
//! nothing twice, and an item the old tracker held in two states lands in the first of: a
//! queue, claimed, done (the old tracker's own order when it says where an item is). A project
//! that exists here and was not made by a migration from the same source is not touched.

use crate::cli::stdout::outln;

mod source;

use super::{progress::Steps, CliError};
use crate::ops::{self, Actor};
use crate::store::Store;
use source::{Fate, Source};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// `tracker migrate ...`
#[derive(clap::Args, Debug)]
pub struct MigrateArgs {
    /// The universal tracker's Redis, `redis://HOST:PORT/DB`; only read.
    #[arg(long)]
    pub from: String,
    /// Only this project (repeat for more; default: every project of the old tracker).
    #[arg(long = "project")]
    pub projects: Vec<String>,
    /// Say what would be imported, per project and kind of key, and every key not known;
    /// change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Go on from where an earlier run from the same source stopped.
    #[arg(long)]
    pub resume: bool,
    /// Where the old logs are written, one JSON line per entry (a folder per project).
    #[arg(long, default_value = "migrated-logs")]
    pub log_dir: PathBuf,
    /// Warrior HQ's Redis (`redis://HOST:PORT/1`), to carry its project list
    /// (`warriorhq:projects_json`) when this tracker has none saved yet.
    #[arg(long)]
    pub hq_from: Option<String>,
}

mod accounts;
mod project;
mod survey;

/// The migration's state: the store, the source, the checkpoint and the progress.
struct Run<'a> {
    store: &'a Store,
    old: &'a Source,
    source_id: String,
    checkpoint: HashMap<String, String>,
    resume: bool,
    steps: Steps,
    moved: u64,
    total: u64,
    actor: Actor,
}

fn fail(what: impl std::fmt::Display) -> CliError {
    CliError::Usage(what.to_string())
}

fn old_err(e: fred::error::Error) -> CliError {
    fail(format!("reading the old tracker: {e}"))
}

/// Runs `tracker migrate`.
pub async fn run(store: &Store, args: MigrateArgs) -> Result<(), CliError> {
    let old = Source::connect(&args.from).await.map_err(fail)?;
    let result = migrate(store, &old, &args).await;
    old.quit().await;
    result
}

async fn migrate(store: &Store, old: &Source, args: &MigrateArgs) -> Result<(), CliError> {
    let mut projects: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    old.scan_all("HSCAN", "trackers", |page| {
        for pair in page.chunks(2) {
            let config = serde_json::from_str(pair.get(1).map_or("", |s| s)).unwrap_or_default();
            projects.insert(pair[0].clone(), config);
        }
    })
    .await
    .map_err(old_err)?;
    for wanted in &args.projects {
        if !projects.contains_key(wanted) {
            return Err(fail(format!("the old tracker has no project {wanted:?}")));
        }
    }
    let found = survey::survey(old, &projects).await?;
    survey::print_survey(&found, &args.projects);
    // A key the import reads that holds another type than the old tracker wrote (a damaged or
    // foreign database) would stop the import half-way: refused before anything is written.
    let wrong: Vec<String> = found
        .wrong_types
        .iter()
        .filter(|(slug, ..)| {
            slug.is_empty() || args.projects.is_empty() || args.projects.contains(slug)
        })
        .map(|(_, key, written, expected)| format!("{key} is a {written}, not a {expected}"))
        .collect();
    if !wrong.is_empty() && !args.dry_run {
        return Err(fail(format!(
            "not the universal tracker's layout, nothing migrated: {}",
            wrong.join("; ")
        )));
    }
    if args.dry_run {
        outln!("dry run: nothing changed");
        return Ok(());
    }
    let chosen: Vec<&String> = projects
        .keys()
        .filter(|s| args.projects.is_empty() || args.projects.contains(s))
        .collect();
    let total = chosen
        .iter()
        .filter_map(|s| found.survey.get(s.as_str()))
        .flat_map(|kinds| kinds.iter())
        .filter(|(k, _)| {
            k.starts_with("queue") || ["personal queues", "claims", "done"].contains(k)
        })
        .map(|(_, (_, _, n))| n)
        .sum();
    let source_id = redacted(&args.from);
    let mut run = Run {
        store,
        old,
        checkpoint: store.upkeep().migration_checkpoint(&source_id).await?,
        source_id,
        resume: args.resume,
        steps: Steps::new("migrate"),
        moved: 0,
        total,
        actor: Actor::cli(),
    };
    let mut imported = Vec::new();
    for slug in chosen {
        if run
            .project(slug, &projects[slug], &found, &args.log_dir)
            .await?
        {
            imported.push(slug.clone());
        }
    }
    run.steps.finish();
    run.accounts(&imported).await?;
    run.global_blocks().await?;
    if let Some(url) = &args.hq_from {
        accounts::project_list(store, url).await?;
    }
    let mut problems = 0;
    for slug in &imported {
        run.finish(slug).await?;
        let found = store.upkeep().check_with(slug, &|_, _| {}).await?;
        for p in &found {
            outln!("{p}");
        }
        problems += found.len();
        outln!(
            "{slug}: {}",
            if found.is_empty() {
                "check clean, active"
            } else {
                "check found problems"
            }
        );
    }
    run.actor
        .record(
            store,
            "migrate",
            "",
            imported.len() as u64,
            run.source_id.as_str(),
        )
        .await?;
    if problems > 0 {
        return Err(fail(format!("{problems} problems found by the checks")));
    }
    outln!(
        "migrated {} projects from {}",
        imported.len(),
        run.source_id
    );
    Ok(())
}

/// `url` without its password, to name the source in the checkpoint and the audit log.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

impl Run<'_> {
    /// Whether `step` of the checkpoint is done, or its saved cursor (with `--resume`).
    fn saved(&self, step: &str) -> Option<&str> {
        self.checkpoint
            .get(step)
            .map(String::as_str)
            .filter(|_| self.resume)
    }

    async fn mark(&mut self, step: &str, value: &str) -> Result<(), CliError> {
        self.store
            .upkeep()
            .set_migration_step(&self.source_id, step, value)
            .await?;
        self.checkpoint.insert(step.to_string(), value.to_string());
        Ok(())
    }

    fn progress(&mut self, n: usize) {
        self.moved += n as u64;
        self.steps.at(self.moved, self.total);
    }

    /// Every page of scan `cmd` of old key `key`, from the checkpoint's cursor of `step`,
    /// handed to `write`; the cursor kept after each page.
    async fn pages<F>(
        &mut self,
        step: &str,
        cmd: &'static str,
        key: &str,
        mut write: F,
    ) -> Result<(), CliError>
    where
        F: AsyncFnMut(&mut Self, Vec<String>) -> Result<(), CliError>,
    {
        let mut cursor = match self.saved(step) {
            Some("done") => return Ok(()),
            Some(c) => c.to_string(),
            None => "0".to_string(),
        };
        loop {
            let (next, page) = self.old.page(cmd, key, &cursor).await.map_err(old_err)?;
            write(self, page).await?;
            let at = if next == "0" { "done" } else { next.as_str() };
            self.mark(step, at).await?;
            if next == "0" {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// Sets project `slug` active, once its items and figures are in.
    async fn finish(&mut self, slug: &str) -> Result<(), CliError> {
        let step = format!("{slug}:finished");
        if self.checkpoint.contains_key(&step) {
            return Ok(());
        }
        let current = ops::project(self.store, slug).await?;
        let active = ops::settings::apply_changes(&current, &["state=active".into()])?;
        ops::settings::save(self.store, &self.actor, slug, &current, &active).await?;
        self.mark(&step, "done").await
    }
}
