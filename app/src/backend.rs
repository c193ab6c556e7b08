//! The seam between the pages and the process: what server functions may ask of the backend.

use crate::model::{Leaderboard, ProjectSummary};
use std::sync::Arc;

/// Operations the pages need; implemented by the server on its Redis store.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// All projects, for the front page.
    async fn projects(&self) -> Result<Vec<ProjectSummary>, String>;
    /// One project's leaderboard, or `None` when there is no such project.
    async fn leaderboard(&self, slug: &str) -> Result<Option<Leaderboard>, String>;
}

/// The backend as provided in Leptos context.
pub type SharedBackend = Arc<dyn Backend>;
