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

mod source;

use super::{progress::Steps, CliError};
use crate::ops::{self, blocks, projects::TargetAction, Actor};
use crate::store::{self, Account, BlockKind, Role, Store};
use source::{Fate, Source};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// What the survey found: per project (or `""`, global), per kind, (fate, keys, elements).
type Survey = BTreeMap<String, BTreeMap<&'static str, (Fate, u64, u64)>>;

/// The survey, and the keys of each project by kind that the import walks.
struct Found {
    survey: Survey,
    personal: HashMap<String, Vec<String>>,
    dl_charts: HashMap<String, Vec<String>>,
    logs: HashMap<String, Vec<String>>,
    unknown: Vec<String>,
    unknown_count: u64,
}

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
    let found = survey(old, &projects).await?;
    print_survey(&found, &args.projects);
    if args.dry_run {
        println!("dry run: nothing changed");
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
        checkpoint: store.migration_checkpoint(&source_id).await?,
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
        project_list(store, url).await?;
    }
    let mut problems = 0;
    for slug in &imported {
        run.finish(slug).await?;
        let found = store.check_with(slug, &|_, _| {}).await?;
        for p in &found {
            println!("{p}");
        }
        problems += found.len();
        println!(
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
    println!(
        "migrated {} projects from {}",
        imported.len(),
        run.source_id
    );
    Ok(())
}

/// Warrior HQ's project list at `url`, saved as this tracker's when it has none yet.
async fn project_list(store: &Store, url: &str) -> Result<(), CliError> {
    let hq = Source::connect(url).await.map_err(fail)?;
    let list = hq.get("warriorhq:projects_json").await.map_err(old_err);
    hq.quit().await;
    let Some(list) = list? else {
        println!(
            "warrior hq: no warriorhq:projects_json at {}",
            redacted(url)
        );
        return Ok(());
    };
    if store.warrior_projects().await?.is_some() {
        println!("warrior hq: a project list is saved here already: not touched");
        return Ok(());
    }
    match crate::admin::project_list::validate_list(&list) {
        Ok(doc) => {
            store
                .save_warrior_projects(&doc.to_string(), crate::store::CLI_ACTOR, store::now_ms())
                .await?;
            let n = doc["projects"].as_array().map_or(0, Vec::len);
            println!("warrior hq: project list carried ({n} projects)");
        }
        Err(why) => println!("warrior hq: project list not carried: {why}"),
    }
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

/// Every key of the old database, by project and kind.
async fn survey(
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
    };
    let steps = Steps::new("survey");
    let total = old.dbsize().await.map_err(old_err)?;
    let (mut cursor, mut seen) = ("0".to_string(), 0);
    loop {
        let (next, names) = old.page("SCAN", "*", &cursor).await.map_err(old_err)?;
        for key in &names {
            survey_key(old, projects, &mut found, key).await?;
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

/// Counts `key` in the survey (or among the unknown keys), and keeps the names the import walks.
async fn survey_key(
    old: &Source,
    projects: &BTreeMap<String, serde_json::Value>,
    found: &mut Found,
    key: &str,
) -> Result<(), CliError> {
    {
        let place = match key.split_once(':') {
            Some((slug, rest)) if projects.contains_key(slug) => {
                source::project_key(rest).map(|kind| (slug, rest, kind))
            }
            _ => source::global_key(key).map(|kind| ("", key, kind)),
        };
        let Some((slug, rest, (kind, fate))) = place else {
            found.unknown_count += 1;
            if found.unknown.len() < 50 {
                found.unknown.push(key.to_string());
            }
            return Ok(());
        };
        let (_, n) = old.size(key).await.map_err(old_err)?;
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
            _ => return Ok(()),
        };
        list.entry(slug.to_string())
            .or_default()
            .push(rest.to_string());
    }
    Ok(())
}

fn print_survey(found: &Found, only: &[String]) {
    for (slug, kinds) in &found.survey {
        if !slug.is_empty() && !only.is_empty() && !only.contains(slug) {
            continue;
        }
        println!("{}", if slug.is_empty() { "global" } else { slug });
        for (kind, (fate, keys, n)) in kinds {
            let what = match fate {
                Fate::Carried => "carried over".to_string(),
                Fate::File => "written to files".to_string(),
                Fate::NotCarried(why) => format!("not carried: {why}"),
                Fate::Transient => "not carried (short-lived)".to_string(),
            };
            println!("  {kind:<22} {keys:>7} keys {n:>12} elements  {what}");
        }
    }
    if found.unknown_count > 0 {
        println!(
            "{} keys the old tracker does not write (not carried):",
            found.unknown_count
        );
        for key in &found.unknown {
            println!("  {key}");
        }
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

    /// Migrates one project; false when it was left alone.
    async fn project(
        &mut self,
        slug: &str,
        config: &serde_json::Value,
        found: &Found,
        log_dir: &Path,
    ) -> Result<bool, CliError> {
        let made = format!("{slug}:project");
        if !store::valid_slug(slug) {
            println!("{slug}: not carried: the slug is reserved here (admin, api, ...)");
            return Ok(false);
        }
        if self.store.project(slug).await?.is_some() && !self.checkpoint.contains_key(&made) {
            println!(
                "{slug}: exists here and was not made by a migration from this source: not touched"
            );
            return Ok(false);
        }
        if !self.checkpoint.contains_key(&made) {
            let text = |k: &str| {
                config
                    .get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string()
            };
            let domains: Vec<String> = config
                .get("domains")
                .and_then(|d| d.as_object())
                .map(|d| d.keys().cloned().collect())
                .unwrap_or_default();
            if let Err(e) =
                ops::projects::create(self.store, &self.actor, slug, &text("title"), domains).await
            {
                println!("{slug}: not carried: {e}");
                return Ok(false);
            }
            self.mark(&made, "done").await?;
        }
        let settings = format!("{slug}:settings");
        if !self.checkpoint.contains_key(&settings) {
            self.settings(slug, config).await?;
            self.mark(&settings, "done").await?;
        }
        let personal = found.personal.get(slug).cloned().unwrap_or_default();
        let queues = ["todo", "todo:secondary", "todo:redo"].map(String::from);
        for part in queues.iter().chain(&personal) {
            if let Err(e) = ops::items::check_queue(part) {
                println!("{slug}: {part} not carried: {e}");
                continue;
            }
            let key = format!("{slug}:{part}");
            self.pages(
                &format!("{slug}:q:{part}"),
                "SSCAN",
                &key,
                async |run, items| {
                    let items: Vec<String> = items.into_iter().filter(|i| !i.is_empty()).collect();
                    run.store.add_items(slug, part, &items).await?;
                    run.progress(items.len());
                    Ok(())
                },
            )
            .await?;
        }
        self.claims(slug, &personal).await?;
        self.pages(
            &format!("{slug}:done"),
            "SSCAN",
            &format!("{slug}:done"),
            async |run, items| {
                run.store.import_done(slug, &personal, &items).await?;
                run.progress(items.len());
                Ok(())
            },
        )
        .await?;
        self.figures(slug, found).await?;
        self.lists(slug, found, log_dir).await?;
        Ok(true)
    }

    /// Gives project `slug` the old tracker's settings, paused until the migration ends.
    async fn settings(&mut self, slug: &str, config: &serde_json::Value) -> Result<(), CliError> {
        let text = |k: &str| {
            config
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        let current = ops::project(self.store, slug).await?;
        let mut s = (*current).clone();
        s.state = "paused".into();
        s.min_version = text("min_script_version");
        s.ignore_global_blocks = config
            .get("ignore_global_blocked")
            .and_then(|v| v.as_bool())
            == Some(true);
        let number = async |key: &str| -> Result<i64, CliError> {
            let raw = self
                .old
                .get(&format!("{slug}:{key}"))
                .await
                .map_err(old_err)?;
            Ok(raw.and_then(|v| v.trim().parse().ok()).unwrap_or(0))
        };
        let per_minute = number("requests_per_minute").await?;
        if per_minute > 0 {
            s.rate = per_minute as f64 / 60.0;
        }
        s.dl_max_claims = (-number("min_downloader_budget").await?).max(0) as u64;
        let checked = ops::settings::check(s)?;
        ops::settings::save(self.store, &self.actor, slug, &current, &checked).await?;
        for (field, why) in [
            (
                "extra_parameters",
                "Ruby code: set the project's `extra` fields instead",
            ),
            ("current_version", "the dashboard's update notice"),
        ] {
            if let Some(v) = self
                .old
                .get(&format!("{slug}:{field}"))
                .await
                .map_err(old_err)?
            {
                println!("{slug}: {field} not carried ({why}): {v:?}");
            }
        }
        println!("{slug}: created (paused while it is migrated)");
        Ok(())
    }

    /// The claims: each `claims` entry with its `out` time, then `out` members without one.
    async fn claims(&mut self, slug: &str, personal: &[String]) -> Result<(), CliError> {
        let (out, claims) = (format!("{slug}:out"), format!("{slug}:claims"));
        let now = store::now_ms();
        self.pages(
            &format!("{slug}:claims"),
            "HSCAN",
            &claims,
            async |run, flat| {
                let items: Vec<String> = flat.iter().step_by(2).cloned().collect();
                let times = run.old.zmscore(&out, &items).await.map_err(old_err)?;
                let page: Vec<store::OldClaim> = flat
                    .chunks(2)
                    .zip(times)
                    .map(|(pair, t)| {
                        let value = pair.get(1).map_or("", |s| s.as_str());
                        let (ip, who) = value.split_once(' ').unwrap_or((value, "unknown"));
                        let t = t.map_or(now, |s| (s.max(0.0) as u64).saturating_mul(1000));
                        (pair[0].clone(), t, who.trim().to_string(), ip.to_string())
                    })
                    .collect();
                run.store.import_claims(slug, personal, &page).await?;
                run.progress(page.len());
                Ok(())
            },
        )
        .await?;
        self.pages(&format!("{slug}:out"), "ZSCAN", &out, async |run, flat| {
            let items: Vec<String> = flat.iter().step_by(2).cloned().collect();
            let held = run.old.hmget(&claims, &items).await.map_err(old_err)?;
            let page: Vec<store::OldClaim> = flat
                .chunks(2)
                .zip(held)
                .filter(|(_, h)| h.is_none())
                .map(|(pair, _)| {
                    let t = pair
                        .get(1)
                        .and_then(|s| s.parse::<f64>().ok())
                        .unwrap_or(0.0);
                    let t = (t.max(0.0) as u64).saturating_mul(1000);
                    (
                        pair[0].clone(),
                        t,
                        "unknown".to_string(),
                        "unknown".to_string(),
                    )
                })
                .collect();
            run.store.import_claims(slug, personal, &page).await?;
            Ok(())
        })
        .await
    }

    /// The downloaders' figures, bytes per domain, the totals and the charts.
    async fn figures(&mut self, slug: &str, found: &Found) -> Result<(), CliError> {
        let step = format!("{slug}:figures");
        if self.saved(&step) == Some("done") {
            return Ok(());
        }
        let key = |name: &str| format!("{slug}:{name}");
        let (counts, bytes, versions) = (
            key("downloader_count"),
            key("downloader_bytes"),
            key("downloader_version"),
        );
        let mut cursor = "0".to_string();
        loop {
            let (next, flat) = self
                .old
                .page("HSCAN", &counts, &cursor)
                .await
                .map_err(old_err)?;
            let names: Vec<String> = flat.iter().step_by(2).cloned().collect();
            let b = self.old.hmget(&bytes, &names).await.map_err(old_err)?;
            let v = self.old.hmget(&versions, &names).await.map_err(old_err)?;
            let rows: Vec<store::OldDownloader> = flat
                .chunks(2)
                .zip(b.into_iter().zip(v))
                .map(|(pair, (b, v))| {
                    let n = pair.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
                    let b = b.and_then(|s| s.parse().ok()).unwrap_or(0);
                    (pair[0].clone(), n, b, v.unwrap_or_default())
                })
                .collect();
            self.store.import_downloaders(slug, &rows).await?;
            if next == "0" {
                break;
            }
            cursor = next;
        }
        let mut domains = Vec::new();
        self.old
            .scan_all("HSCAN", &key("domain_bytes"), |page| {
                for pair in page.chunks(2) {
                    let b = pair.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
                    domains.push((pair[0].clone(), b));
                }
            })
            .await
            .map_err(old_err)?;
        self.store.import_domain_bytes(slug, &domains).await?;
        let total_bytes = domains.iter().map(|(_, b)| b).sum();
        let counter = self.old.get(&key("done_counter")).await.map_err(old_err)?;
        let counter = counter.and_then(|c| c.trim().parse().ok()).unwrap_or(0);
        let figures = self
            .store
            .import_figures(slug, counter, total_bytes)
            .await?;
        if figures.done_gap > 0 {
            println!(
                "{slug}: done_counter says {counter} items done, the old done set listed {}: the {} more are counted, not listed",
                figures.done_items - figures.done_gap,
                figures.done_gap
            );
        }
        if figures.dl_gap != 0 {
            println!(
                "{slug}: the downloaders' items sum to {} of the {} done (as in the old tracker)",
                figures.done_items as i64 - figures.dl_gap,
                figures.done_items
            );
        }
        let old = self.old;
        let chart = async |name: &str| {
            let raw = old.get(&key(name)).await.map_err(old_err)?;
            Ok::<_, CliError>(source::hex_chart(&raw.unwrap_or_default()))
        };
        let items = chart("chart:total_items").await?;
        let merged = source::merge_charts(&items, &chart("chart:total_bytes").await?);
        self.store.import_chart(slug, &merged).await?;
        for rest in found.dl_charts.get(slug).into_iter().flatten() {
            let who = rest.trim_start_matches("chart:downloader_bytes:");
            let points = chart(rest).await?;
            self.store.import_dl_chart(slug, who, &points).await?;
        }
        self.mark(&step, "done").await
    }

    /// Blocks, upload targets, project admins (read with the accounts) and the logs.
    async fn lists(&mut self, slug: &str, found: &Found, log_dir: &Path) -> Result<(), CliError> {
        let step = format!("{slug}:lists");
        if self.saved(&step) == Some("done") {
            return Ok(());
        }
        let mut blocked = Vec::new();
        self.old
            .scan_all("SSCAN", &format!("{slug}:blocked"), |p| blocked.extend(p))
            .await
            .map_err(old_err)?;
        for value in blocked {
            self.block(Some(slug), &value).await?;
        }
        for (key, action) in [
            ("upload_target", TargetAction::Activate),
            ("inactive_upload_target", TargetAction::Deactivate),
        ] {
            let mut targets = Vec::new();
            self.old
                .scan_all("SSCAN", &format!("{slug}:{key}"), |p| targets.extend(p))
                .await
                .map_err(old_err)?;
            for t in targets {
                if let Err(e) =
                    ops::projects::change_target(self.store, &self.actor, slug, &t, action).await
                {
                    println!("{slug}: upload target {t:?} not carried: {e}");
                }
            }
        }
        let dir = log_dir.join(slug);
        for rest in found.logs.get(slug).into_iter().flatten() {
            let n = self
                .write_log(&format!("{slug}:{rest}"), &dir, rest)
                .await?;
            println!("{slug}: {rest}: {n} entries written to {}", dir.display());
        }
        self.mark(&step, "done").await
    }

    /// Writes old list `key` to `dir/<name>.jsonl` (`:` made `_`), a page at a time; entries.
    async fn write_log(&self, key: &str, dir: &Path, name: &str) -> Result<u64, CliError> {
        let path = dir.join(format!("{}.jsonl", name.replace(':', "_")));
        let io = |e| CliError::Io(path.display().to_string(), e);
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io)?);
        let mut from = 0;
        loop {
            let page = self.old.list_page(key, from).await.map_err(old_err)?;
            for line in &page {
                writeln!(file, "{line}").map_err(io)?;
            }
            from += page.len() as i64;
            if page.len() < 1000 {
                break;
            }
        }
        file.flush().map_err(io)?;
        Ok(from as u64)
    }

    /// Blocks `value` (an IP or a downloader, as the old lists mix them) in `project` or globally.
    async fn block(&self, project: Option<&str>, value: &str) -> Result<(), CliError> {
        let kind = if value.parse::<std::net::IpAddr>().is_ok() {
            BlockKind::Ip
        } else {
            BlockKind::Downloader
        };
        let how = blocks::NewBlock {
            project: project.map(String::from),
            reason: "blocked in the universal tracker".into(),
            hours: None,
        };
        if let Err(e) = blocks::block(self.store, &self.actor, kind, value, how).await {
            println!(
                "{}: block of {value:?} not carried: {e}",
                project.unwrap_or("global")
            );
        }
        Ok(())
    }

    /// The old accounts: `admins` global, a project's `tracker_admins` its admins; each keeps
    /// its bcrypt hash until its first login here.
    async fn accounts(&mut self, imported: &[String]) -> Result<(), CliError> {
        let mut global = HashSet::new();
        self.old
            .scan_all("SSCAN", "admins", |p| {
                global.extend(p.into_iter().map(|n| n.to_lowercase()))
            })
            .await
            .map_err(old_err)?;
        let mut of: HashMap<String, Vec<String>> = HashMap::new();
        for slug in imported {
            self.old
                .scan_all("SSCAN", &format!("{slug}:tracker_admins"), |p| {
                    for name in p {
                        of.entry(name.to_lowercase())
                            .or_default()
                            .push(slug.clone());
                    }
                })
                .await
                .map_err(old_err)?;
        }
        let mut users = Vec::new();
        self.old
            .scan_all("HSCAN", "users", |p| users.extend(p))
            .await
            .map_err(old_err)?;
        for pair in users.chunks(2) {
            let (old_name, hash) = (
                pair[0].to_lowercase(),
                pair.get(1).cloned().unwrap_or_default(),
            );
            let mut name = old_name.clone();
            if store::RESERVED_USER_NAMES.contains(&name.as_str()) {
                name = format!("{name}-ut");
                println!("user {old_name}: the name is reserved here; carried as {name}");
            }
            if let Some(problem) = store::user_name_problem(&name) {
                println!("user {old_name}: not carried: {problem}");
                continue;
            }
            if !hash.starts_with("$2") {
                println!("user {old_name}: not carried: its password hash is not bcrypt");
                continue;
            }
            let (role, projects) = if global.contains(&old_name) {
                (Role::Global, vec![])
            } else {
                (Role::Project, of.remove(&old_name).unwrap_or_default())
            };
            let account = Account {
                name: name.clone(),
                hash,
                role,
                projects,
                t: store::now_ms(),
                gen: store::new_session_gen(),
            };
            if self.store.create_account(&account).await? {
                self.actor
                    .record(
                        self.store,
                        "account.create",
                        "",
                        1,
                        format!("{name} (migrated)"),
                    )
                    .await?;
                println!("user {name}: carried as {} (password kept)", role.as_str());
            } else {
                println!("user {name}: an account of that name exists here: not touched");
            }
        }
        if global.is_empty() && !users.is_empty() {
            println!("note: the old `admins` set is empty, so its admin pages were open to anyone; the users carried are no global admins here");
        }
        Ok(())
    }

    async fn global_blocks(&mut self) -> Result<(), CliError> {
        if self.saved("global:blocks") == Some("done") {
            return Ok(());
        }
        let mut blocked = Vec::new();
        self.old
            .scan_all("SSCAN", "global_blocked", |p| blocked.extend(p))
            .await
            .map_err(old_err)?;
        for value in blocked {
            self.block(None, &value).await?;
        }
        self.mark("global:blocks", "done").await
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
