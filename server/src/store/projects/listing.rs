//! A project's Warrior listing, the changes of its lifecycle state as recorded, and the
//! `auto_project` of Warrior HQ with an admin's pin.
//!
//! State changes and `auto_project` changes are recorded with `SET ... GET`: of several
//! processes noticing the same change, exactly one sees the old value differ and writes the
//! record.

use super::{guarded::command, StoreResult};
use app::model::{admin::Listing, lifecycle::Transition};
use fred::prelude::*;

/// Recorded state changes kept per project.
pub const TRANSITIONS: i64 = 100;

impl super::Projects<'_> {
    /// A project's Warrior listing (the defaults when none was saved).
    pub async fn listing(self, slug: &str) -> StoreResult<Listing> {
        let raw: Option<String> = self
            .pool
            .next()
            .hget(self.keys.project(slug).admin(), "listing")
            .await?;
        Ok(raw
            .and_then(|r| serde_json::from_str(&r).ok())
            .unwrap_or_default())
    }

    /// Saves a project's Warrior listing.
    pub async fn save_listing(self, slug: &str, listing: &Listing) -> StoreResult<()> {
        let text = serde_json::to_string(listing).unwrap_or_default();
        self.people()
            .set_project_extra(slug, "listing", &text)
            .await?;
        self.settings_changed().await?;
        Ok(())
    }

    /// Records that `slug` is in `state` at `now_ms`: the state it left when that is a change
    /// (`Some("")` for the first record), `None` when it was in it already.
    pub async fn record_state(
        self,
        slug: &str,
        state: &str,
        now_ms: u64,
    ) -> StoreResult<Option<String>> {
        let k = self.keys.project(slug);
        let set = command(["SET", &k.status(), state, "GET"]);
        let old = self.write_in_project(slug, vec![set]).await?;
        let from = match old.into_iter().next() {
            Some(fred::types::Value::String(s)) => s.to_string(),
            Some(fred::types::Value::Bytes(b)) => String::from_utf8_lossy(&b).into_owned(),
            _ => String::new(),
        };
        if from == state {
            return Ok(None);
        }
        let entry = Transition {
            state: state.into(),
            from: from.clone(),
            t: now_ms,
        };
        let text = serde_json::to_string(&entry).unwrap_or_default();
        let last = (TRANSITIONS - 1).to_string();
        let push = command(["LPUSH", &k.lifecycle(), &text]);
        let trim = command(["LTRIM", &k.lifecycle(), "0", &last]);
        self.write_in_project(slug, vec![push, trim]).await?;
        Ok(Some(from))
    }

    /// A project's recorded state changes, newest first.
    pub async fn transitions(self, slug: &str) -> StoreResult<Vec<Transition>> {
        let raw: Vec<String> = self
            .pool
            .next()
            .lrange(self.keys.project(slug).lifecycle(), 0, TRANSITIONS - 1)
            .await?;
        let mut out: Vec<Transition> = raw
            .iter()
            .filter_map(|r| serde_json::from_str(r).ok())
            .collect();
        // Two processes may push out of order by a moment: newest first by time.
        out.sort_by_key(|t| std::cmp::Reverse(t.t));
        Ok(out)
    }

    /// The project an admin pinned as `auto_project`.
    pub async fn auto_pin(self) -> StoreResult<Option<String>> {
        let pin: Option<String> = self.pool.next().get(self.keys.hq_pin()).await?;
        Ok(pin.filter(|p| !p.is_empty()))
    }

    /// Pins `auto_project` to `slug`, or unpins it.
    pub async fn set_auto_pin(self, slug: Option<&str>) -> StoreResult<()> {
        let client = self.pool.next();
        match slug {
            Some(s) => {
                client
                    .set::<(), _, _>(self.keys.hq_pin(), s, None, None, false)
                    .await?
            }
            None => client.del::<(), _>(self.keys.hq_pin()).await?,
        }
        self.settings_changed().await?;
        Ok(())
    }

    /// Records `auto_project` as `slug` (`None`: no project): the project it named before when
    /// that is a change, `None` when it named this one already.
    pub async fn record_auto(self, slug: Option<&str>) -> StoreResult<Option<Option<String>>> {
        let now = slug.unwrap_or("");
        let old: Option<String> = self
            .pool
            .next()
            .set(self.keys.hq_auto(), now, None, None, true)
            .await?;
        let old = old.unwrap_or_default();
        Ok((old != now).then(|| Some(old).filter(|o| !o.is_empty())))
    }
}
