//! One project of `tracker migrate`: created paused with its settings, then its queues, claims,
//! done items, figures, charts, lists and logs, a page at a time.

use crate::cli::stdout::outln;

use super::{old_err, source, survey::Found, CliError, Run};
use crate::ops::{self, projects::TargetAction};
use crate::store;
use std::path::Path;

impl Run<'_> {
    /// Migrates one project; false when it was left alone.
    pub(super) async fn project(
        &mut self,
        slug: &str,
        config: &serde_json::Value,
        found: &Found,
        log_dir: &Path,
    ) -> Result<bool, CliError> {
        let made = format!("{slug}:project");
        if !store::valid_slug(slug) {
            outln!("{slug}: not carried: the slug is reserved here (admin, api, ...)");
            return Ok(false);
        }
        if self.store.projects().project(slug).await?.is_some()
            && !self.checkpoint.contains_key(&made)
        {
            outln!(
                "{slug}: exists here and was not made by a migration from this source: not touched"
            );
            return Ok(false);
        }
        if !self.checkpoint.contains_key(&made) {
            let text = |k: &str| config_text(config, k);
            let domains: Vec<String> = config
                .get("domains")
                .and_then(|d| d.as_object())
                .map(|d| d.keys().cloned().collect())
                .unwrap_or_default();
            if let Err(e) =
                ops::projects::create(self.store, &self.actor, slug, &text("title"), domains).await
            {
                outln!("{slug}: not carried: {e}");
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
                outln!("{slug}: {part} not carried: {e}");
                continue;
            }
            let key = format!("{slug}:{part}");
            self.pages(
                &format!("{slug}:q:{part}"),
                "SSCAN",
                &key,
                async |run, items| {
                    let items: Vec<String> = items.into_iter().filter(|i| !i.is_empty()).collect();
                    run.store.queue().add_items(slug, part, &items).await?;
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
                run.store
                    .upkeep()
                    .import_done(slug, &personal, &items)
                    .await?;
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
        let text = |k: &str| config_text(config, k);
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
                outln!("{slug}: {field} not carried ({why}): {v:?}");
            }
        }
        outln!("{slug}: created (paused while it is migrated)");
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
                run.store
                    .upkeep()
                    .import_claims(slug, personal, &page)
                    .await?;
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
            run.store
                .upkeep()
                .import_claims(slug, personal, &page)
                .await?;
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
            self.store.upkeep().import_downloaders(slug, &rows).await?;
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
        self.store
            .upkeep()
            .import_domain_bytes(slug, &domains)
            .await?;
        let total_bytes = domains.iter().map(|(_, b)| b).sum();
        let counter = self.old.get(&key("done_counter")).await.map_err(old_err)?;
        let counter = counter.and_then(|c| c.trim().parse().ok()).unwrap_or(0);
        let figures = self
            .store
            .upkeep()
            .import_figures(slug, counter, total_bytes)
            .await?;
        if figures.done_gap > 0 {
            outln!(
                "{slug}: done_counter says {counter} items done, the old done set listed {}: the {} more are counted, not listed",
                figures.done_items - figures.done_gap,
                figures.done_gap
            );
        }
        if figures.dl_gap != 0 {
            outln!(
                "{slug}: the downloaders' items sum to {} of the {} done (as in the old tracker)",
                figures.done_items as i64 - figures.dl_gap,
                figures.done_items
            );
        }
        let old = self.old;
        let chart = async |name: &str| old.chart(&key(name)).await.map_err(old_err);
        let items = chart("chart:total_items").await?;
        let merged = source::merge_charts(&items, &chart("chart:total_bytes").await?);
        self.store.upkeep().import_chart(slug, &merged).await?;
        for rest in found.dl_charts.get(slug).into_iter().flatten() {
            let who = rest.trim_start_matches("chart:downloader_bytes:");
            let points = chart(rest).await?;
            self.store
                .upkeep()
                .import_dl_chart(slug, who, &points)
                .await?;
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
                    outln!("{slug}: upload target {t:?} not carried: {e}");
                }
            }
        }
        let dir = log_dir.join(slug);
        for rest in found.logs.get(slug).into_iter().flatten() {
            let n = self
                .write_log(&format!("{slug}:{rest}"), &dir, rest)
                .await?;
            outln!("{slug}: {rest}: {n} entries written to {}", dir.display());
        }
        self.mark(&step, "done").await
    }

    /// Writes old list `key` to `dir/<name>.jsonl` (`:` made `_`), a page at a time; entries.
    async fn write_log(&self, key: &str, dir: &Path, name: &str) -> Result<u64, CliError> {
        let path = dir.join(format!("{}.jsonl", name.replace(':', "_")));
        use tokio::io::AsyncWriteExt;
        let io = |e| CliError::Io(path.display().to_string(), e);
        tokio::fs::create_dir_all(dir).await.map_err(io)?;
        let file = tokio::fs::File::create(&path).await.map_err(io)?;
        let mut file = tokio::io::BufWriter::new(file);
        let mut from = 0;
        loop {
            let page = self.old.list_page(key, from).await.map_err(old_err)?;
            for line in &page {
                file.write_all(line.as_bytes()).await.map_err(io)?;
                file.write_all(b"\n").await.map_err(io)?;
            }
            from += page.len() as i64;
            if page.len() < 1000 {
                break;
            }
        }
        file.flush().await.map_err(io)?;
        Ok(from as u64)
    }
}

/// A text field of an old project's config JSON (absent or not a text: empty).
fn config_text(config: &serde_json::Value, key: &str) -> String {
    config
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}
