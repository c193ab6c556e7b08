//! The pages' data ([`app::backend::Backend`]) read from the store: what the server-rendered
//! pages and the `/board/...` JSON show, with a read failure turned into the page's message.

use super::{now_ms, valid_slug, Store, StoreError, PAGE_DOWNLOADERS};
use app::{
    backend::Backend,
    model::{ChartData, Contributors, FleetStats, Leaderboard, ProjectSummary},
};

/// How many downloaders the page's cumulative-bytes chart offers.
const CHART_DOWNLOADERS: i64 = 10;

fn read_failed(e: StoreError, what: &str, slug: &str) -> String {
    if matches!(e, StoreError::Unavailable(_)) {
        tracing::warn!(error = %e, slug, what, "reading page data");
        return super::RECONNECTING.to_string();
    }
    tracing::error!(error = %e, slug, what, "reading page data");
    "The tracker could not read its data.".to_string()
}

#[async_trait::async_trait]
impl Backend for Store {
    async fn projects(&self) -> Result<Vec<ProjectSummary>, String> {
        self.figures()
            .list_projects(now_ms())
            .await
            .map_err(|e| read_failed(e, "projects", ""))
    }

    async fn contributors(&self) -> Result<Contributors, String> {
        self.figures()
            .contributors(now_ms())
            .await
            .map_err(|e| read_failed(e, "contributors", ""))
    }

    async fn leaderboard(&self, slug: &str, window: u64) -> Result<Option<Leaderboard>, String> {
        if !valid_slug(slug) {
            return Ok(None);
        }
        self.figures()
            .board_page(slug, now_ms(), window.clamp(1, 1440))
            .await
            .map_err(|e| read_failed(e, "leaderboard", slug))
    }

    async fn downloader_window(
        &self,
        slug: &str,
        window: u64,
    ) -> Result<Vec<(String, u64, u64)>, String> {
        if !valid_slug(slug) {
            return Ok(vec![]);
        }
        let (sums, top) = tokio::try_join!(
            self.figures()
                .downloader_window(slug, now_ms(), window.clamp(1, 1440)),
            self.figures().top_downloader_names(slug, PAGE_DOWNLOADERS),
        )
        .map_err(|e| read_failed(e, "downloader window", slug))?;
        // Only the rows the page holds: with thousands of downloaders the rest would be waste.
        Ok(top
            .into_iter()
            .filter_map(|d| sums.get(&d).map(|&(i, b)| (d, i, b)))
            .collect())
    }

    async fn tracker_figures(&self, slug: &str) -> Result<app::model::TrackerStats, String> {
        if !valid_slug(slug) {
            return Ok(Default::default());
        }
        self.figures()
            .tracker_figures(slug, now_ms())
            .await
            .map_err(|e| read_failed(e, "tracker statistics", slug))
    }

    async fn fleet_stats(&self) -> Result<FleetStats, String> {
        self.fleet()
            .fleet_stats(now_ms())
            .await
            .map_err(|e| read_failed(e, "fleet", ""))
    }

    async fn charts(&self, slug: &str) -> Result<Option<ChartData>, String> {
        if !valid_slug(slug) || self.projects().project(slug).await.ok().flatten().is_none() {
            return Ok(None);
        }
        let charts = self
            .figures()
            .charts(slug, CHART_DOWNLOADERS)
            .await
            .map_err(|e| read_failed(e, "charts", slug))?;
        // Minute points for the last day; older ones hourly (exact: the series are cumulative).
        let cut = now_ms() / 1000 - 86_400;
        let thin = |s: Vec<(u64, u64)>| {
            let at = s.partition_point(|p| p.0 < cut);
            let mut out = app::model::downsample(&s[..at], 3600);
            out.extend_from_slice(&s[at..]);
            out
        };
        let mut downloaders: Vec<(String, Vec<(u64, u64)>)> = charts
            .downloaders
            .into_iter()
            .map(|(d, s)| (d, thin(s)))
            .collect();
        downloaders.sort_by_key(|(_, s)| std::cmp::Reverse(s.last().map_or(0, |p| p.1)));
        Ok(Some(ChartData {
            items: thin(charts.items),
            bytes: thin(charts.bytes),
            downloaders,
        }))
    }
}
