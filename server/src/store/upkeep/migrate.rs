//! What `tracker migrate` writes into a project: a universal tracker's claimed and done items
//! (`import.lua`, a page per call, each item only where the project does not know it yet), its
//! totals, its downloaders' figures and charts, and the migration's checkpoint. Every write
//! here sets rather than adds, so a page written twice (a migration resumed or run again) leaves
//! what the first wrote.

use super::StoreResult;
use fred::prelude::*;
use std::collections::HashMap;

/// One claim of the old tracker: item, claim time (ms), downloader, IP.
pub type OldClaim = (String, u64, String, String);

/// One downloader's figures in the old tracker: name, items, bytes, last version.
pub type OldDownloader = (String, u64, u64, String);

/// The project's totals after [`crate::store::upkeep::Upkeep::import_figures`].
#[derive(Debug, serde::Deserialize)]
pub struct ImportedFigures {
    /// Items done, as the pages show them.
    #[serde(deserialize_with = "super::scripts::lua_count")]
    pub done_items: u64,
    /// Of them, items the old tracker counted done but no longer listed in its `done` set.
    #[serde(deserialize_with = "super::scripts::lua_count")]
    pub done_gap: u64,
    /// Items done less the downloaders' items (the old counts' own drift; may be negative).
    #[serde(deserialize_with = "signed")]
    pub dl_gap: i64,
}

fn signed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let s: String = serde::Deserialize::deserialize(d)?;
    s.parse().map_err(serde::de::Error::custom)
}

impl super::Upkeep<'_> {
    /// Claims `claims` in project `slug` as the old tracker had them (each item not known here
    /// yet); how many were added. `personal`: the personal queue parts to look in too.
    pub async fn import_claims(
        self,
        slug: &str,
        personal: &[String],
        claims: &[OldClaim],
    ) -> StoreResult<u64> {
        let mut args = self.import_args(slug, "claims", personal);
        for (item, t, who, ip) in claims {
            // The record a claim of the same downloader and address writes (no version or
            // user agent: the old tracker kept neither), claimed once.
            let request = super::queue::items::ClaimRequest {
                downloader: who.clone(),
                ip: ip.clone(),
                ..Default::default()
            };
            let record = format!(
                "{}1}}",
                super::queue::items::claim_record_head(&request, *t)
            );
            args.push(item.as_str().into());
            args.push(t.to_string().into());
            args.push(who.as_str().into());
            args.push(record.into());
        }
        self.import(slug, args).await
    }

    /// Puts `items` in project `slug`'s done set, counted (each item not known here yet); how
    /// many were added.
    pub async fn import_done(
        self,
        slug: &str,
        personal: &[String],
        items: &[String],
    ) -> StoreResult<u64> {
        let mut args = self.import_args(slug, "done", personal);
        args.extend(items.iter().map(|i| Value::from(i.as_str())));
        self.import(slug, args).await
    }

    /// Sets project `slug`'s totals to the old tracker's: its done counter (where larger than
    /// the items done here) and its byte total. Run after the downloaders' figures.
    pub async fn import_figures(
        self,
        slug: &str,
        done_counter: u64,
        bytes: u64,
    ) -> StoreResult<ImportedFigures> {
        let mut args = self.import_args(slug, "figures", &[]);
        args.push(done_counter.to_string().into());
        args.push(bytes.to_string().into());
        let k = self.keys.project(slug);
        self.scripts
            .call(
                self.pool.next(),
                &self.scripts.import,
                k.import_keys(),
                args,
            )
            .await?
            .map_err(|refusal| super::StoreError::Reply {
                script: "import",
                detail: format!("{refusal:?}"),
            })
    }

    fn import_args(self, slug: &str, mode: &str, personal: &[String]) -> Vec<Value> {
        let k = self.keys.project(slug);
        let mut args = vec![
            Value::from(k.prefix()),
            Value::from(mode),
            Value::from(personal.len().to_string()),
        ];
        args.extend(personal.iter().map(|p| Value::from(p.as_str())));
        args
    }

    async fn import(self, slug: &str, args: Vec<Value>) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        self.scripts
            .run(
                self.pool.next(),
                &self.scripts.import,
                k.import_keys(),
                args,
            )
            .await
    }

    /// Sets the figures of project `slug`'s downloaders `rows` to the old tracker's (their
    /// items and bytes on the leaderboard, their last version).
    pub async fn import_downloaders(self, slug: &str, rows: &[OldDownloader]) -> StoreResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let k = self.keys.project(slug);
        let items: Vec<(f64, &str)> = rows.iter().map(|r| (r.1 as f64, r.0.as_str())).collect();
        let bytes: Vec<(f64, &str)> = rows.iter().map(|r| (r.2 as f64, r.0.as_str())).collect();
        let versions: Vec<(&str, &str)> = rows
            .iter()
            .filter(|r| !r.3.is_empty())
            .map(|r| (r.0.as_str(), r.3.as_str()))
            .collect();
        let pipe = self.pool.next().pipeline();
        let _: () = pipe
            .zadd(k.dl_items(), None, None, false, false, items)
            .await?;
        let _: () = pipe
            .zadd(k.dl_bytes(), None, None, false, false, bytes)
            .await?;
        if !versions.is_empty() {
            let _: () = pipe.hset(k.dl_version(), versions).await?;
        }
        let _: Vec<Value> = pipe.all().await?;
        Ok(())
    }

    /// Sets project `slug`'s bytes per domain to the old tracker's.
    pub async fn import_domain_bytes(self, slug: &str, rows: &[(String, u64)]) -> StoreResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let k = self.keys.project(slug);
        let fields: Vec<(&str, String)> = rows
            .iter()
            .map(|(d, b)| (d.as_str(), b.to_string()))
            .collect();
        let _: () = self.pool.next().hset(k.domain_bytes(), fields).await?;
        Ok(())
    }

    /// Sets project `slug`'s chart to `points` (minute, items, bytes; cumulative, in order).
    pub async fn import_chart(self, slug: &str, points: &[(u64, u64, u64)]) -> StoreResult<()> {
        let k = self.keys.project(slug);
        let lines: Vec<String> = points
            .iter()
            .map(|(m, i, b)| format!("{m} {i} {b}"))
            .collect();
        let pipe = self.pool.next().pipeline();
        replace_list(&pipe, &k.chart(), lines).await?;
        let _: Vec<Value> = pipe.all().await?;
        Ok(())
    }

    /// Sets the chart of downloader `who` of project `slug` to `points` (minute, bytes;
    /// cumulative, in order): the last point's minute is the one the tracker reads from the
    /// downloader's total, and the time it was last seen. One round trip.
    pub async fn import_dl_chart(
        self,
        slug: &str,
        who: &str,
        points: &[(u64, u64)],
    ) -> StoreResult<()> {
        let Some(((last, _), before)) = points.split_last() else {
            return Ok(());
        };
        let k = self.keys.project(slug);
        let lines: Vec<String> = before.iter().map(|(m, b)| format!("{m} {b}")).collect();
        let pipe = self.pool.next().pipeline();
        replace_list(&pipe, &k.dl_chart(who), lines).await?;
        let _: () = pipe
            .hset(k.dl_chart_last(), (who, last.to_string()))
            .await?;
        let _: () = pipe
            .hset(k.dl_seen(), (who, (last * 60_000).to_string()))
            .await?;
        let _: Vec<Value> = pipe.all().await?;
        Ok(())
    }

    /// The checkpoint of the migration from `source`: step -> cursor or `done`.
    pub async fn migration_checkpoint(self, source: &str) -> StoreResult<HashMap<String, String>> {
        Ok(self
            .pool
            .next()
            .hgetall(self.keys.migration(source))
            .await?)
    }

    /// Records `value` for `step` in the checkpoint of the migration from `source`.
    pub async fn set_migration_step(
        self,
        source: &str,
        step: &str,
        value: &str,
    ) -> StoreResult<()> {
        let _: () = self
            .pool
            .next()
            .hset(self.keys.migration(source), (step, value))
            .await?;
        Ok(())
    }
}

/// Queues on `pipe` the replacement of list `key` by `lines`.
async fn replace_list(
    pipe: &fred::clients::Pipeline<Client>,
    key: &str,
    lines: Vec<String>,
) -> StoreResult<()> {
    let _: () = pipe.del(key).await?;
    for chunk in lines.chunks(1000) {
        let _: () = pipe.rpush(key, chunk.to_vec()).await?;
    }
    Ok(())
}
