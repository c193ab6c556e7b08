//! The seam between the pages and the process: what the pages may ask of the backend.

use crate::model::{
    ChartData, Contributors, FleetStats, Leaderboard, ProjectSummary, TrackerStats,
};

/// Operations the pages need; implemented by the server on its Redis store.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// All projects, for the front page.
    async fn projects(&self) -> Result<Vec<ProjectSummary>, String>;
    /// Unique contributors of all projects together, this month and the months before.
    async fn contributors(&self) -> Result<Contributors, String>;
    /// One project's leaderboard page data with downloader sums over the last `window`
    /// minutes (kept within 1 to 1440), or `None` when there is no such project.
    async fn leaderboard(&self, slug: &str, window: u64) -> Result<Option<Leaderboard>, String>;
    /// Items and bytes over the last `window` minutes (kept within 1 to 1440) of each of the
    /// top downloaders (those a page's snapshot holds) that did something in it.
    async fn downloader_window(
        &self,
        slug: &str,
        window: u64,
    ) -> Result<Vec<(String, u64, u64)>, String>;
    /// The project's tracker statistics of the last hour (zeros for an unknown project).
    async fn tracker_figures(&self, slug: &str) -> Result<TrackerStats, String>;
    /// The project's charts, or `None` when there is no such project.
    async fn charts(&self, slug: &str) -> Result<Option<ChartData>, String>;
    /// The Warrior HQ fleet: warriors per selected project and per whole degree of position.
    async fn fleet_stats(&self) -> Result<FleetStats, String>;
}
