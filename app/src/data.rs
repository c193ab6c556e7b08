//! The public pages' data.
//!
//! A page's first data ([`PageData`]) is read by the server before it renders the page
//! ([`load_page`]), and travels with the HTML as JSON in `<script id="page-data">`. The browser
//! reads it from there before it hydrates ([`page_data`]), so the pages render synchronously on
//! both sides: no resource, no `Suspense`, and none of their machinery in the Wasm every
//! volunteer loads (some 25 KB gzip).
//!
//! After hydration the browser GETs fresher parts as JSON of the types of `app::model`
//! (`/board/...`, server `api/pages.rs`):
//! - `downloader_window(slug, window)`: items and bytes per top downloader over the last
//!   `window` minutes (at most a day).
//!
//! The tracker statistics come over the live socket (the server reads them once for all
//! viewers); `/board/SLUG/figures.json` stays for tools.

use crate::model::{ChartData, Contributors, FleetStats, Leaderboard, ProjectSummary};
use serde::{Deserialize, Serialize};

/// The id of the `<script type="application/json">` holding the page's [`PageData`].
pub const PAGE_DATA_ID: &str = "page-data";

/// The data a public page is rendered from. Which fields are set depends on the page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PageData {
    /// `/`: every project's summary.
    pub projects: Option<Vec<ProjectSummary>>,
    /// `/`: unique contributors of all projects per month.
    #[serde(default)]
    pub contributors: Option<Contributors>,
    /// `/`: the Warrior HQ fleet, for the world map.
    #[serde(default)]
    pub fleet: Option<FleetStats>,
    /// `/SLUG/`: the leaderboard with downloader sums over the page's first rate window, and
    /// its charts; `None` when there is no such project (the page answers 404).
    pub board: Option<(Leaderboard, ChartData)>,
    /// Why the data could not be read (the page shows it).
    pub error: Option<String>,
}

#[cfg(feature = "ssr")]
pub use server_side::*;

#[cfg(not(feature = "ssr"))]
pub use browser_side::*;

#[cfg(feature = "ssr")]
mod server_side {
    use super::PageData;
    use crate::{backend::Backend, model::WINDOWS};
    use leptos::prelude::use_context;

    /// The rate window a leaderboard opens with, minutes.
    const FIRST_WINDOW: u64 = WINDOWS[0];

    /// What a path of the public app shows.
    #[derive(Debug, PartialEq)]
    enum PublicPage {
        Home,
        /// A project's leaderboard, by slug (the page answers 404 for an unknown project).
        Board(String),
        Missing,
    }

    /// `/` is the project list, `/SEGMENT/` a leaderboard, anything else not found.
    fn public_page(path: &str) -> PublicPage {
        if path == "/" {
            return PublicPage::Home;
        }
        match path.strip_prefix('/').and_then(|p| p.strip_suffix('/')) {
            Some(slug) if !slug.is_empty() && !slug.contains('/') => PublicPage::Board(slug.into()),
            _ => PublicPage::Missing,
        }
    }

    /// Reads the data of the public page at `path` from `backend`: the project list for `/`, a
    /// board for `/SLUG/`, nothing for an unknown path (the app then shows "not found").
    pub async fn load_page(backend: &dyn Backend, path: &str) -> PageData {
        let mut data = PageData::default();
        match public_page(path) {
            PublicPage::Home => match futures::join!(
                backend.projects(),
                backend.contributors(),
                backend.fleet_stats()
            ) {
                (Ok(list), Ok(months), Ok(fleet)) => {
                    data.projects = Some(list);
                    data.contributors = Some(months);
                    data.fleet = Some(fleet);
                }
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => data.error = Some(e),
            },
            PublicPage::Board(slug) => {
                let (board, charts) = futures::join!(
                    backend.leaderboard(&slug, FIRST_WINDOW),
                    backend.charts(&slug)
                );
                match (board, charts) {
                    (Ok(Some(b)), Ok(c)) => data.board = Some((b, c.unwrap_or_default())),
                    (Ok(None), _) => {}
                    (Err(e), _) | (_, Err(e)) => data.error = Some(e),
                }
            }
            PublicPage::Missing => {}
        }
        data
    }

    /// The page's data, as the server's handler provided it in context.
    pub fn page_data() -> PageData {
        use_context::<PageData>().unwrap_or_default()
    }

    /// `data` as the text of a `<script>` element: JSON in which no `<` can close the element.
    pub fn page_data_script(data: &PageData) -> String {
        serde_json::to_string(data)
            .unwrap_or_else(|_| "{}".into())
            .replace('<', "\\u003c")
    }

    #[cfg(test)]
    mod tests {
        use super::{public_page, PublicPage};

        #[test]
        fn paths_choose_the_public_page() {
            assert_eq!(public_page("/"), PublicPage::Home);
            assert_eq!(
                public_page("/warrior/"),
                PublicPage::Board("warrior".into())
            );
            for missing in ["", "//", "/warrior", "/a/b/", "/admin/x"] {
                assert_eq!(public_page(missing), PublicPage::Missing, "{missing}");
            }
        }
    }
}

#[cfg(not(feature = "ssr"))]
mod browser_side {
    use super::{PageData, PAGE_DATA_ID};

    /// The page's data, read from the page's `<script id="page-data">`. A page without it (or
    /// with data this build cannot read) shows the reason instead.
    pub fn page_data() -> PageData {
        #[cfg(feature = "hydrate")]
        {
            let text = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.get_element_by_id(PAGE_DATA_ID))
                .and_then(|e| e.text_content());
            match text.map(|t| serde_json::from_str::<PageData>(&t)) {
                Some(Ok(data)) => data,
                Some(Err(e)) => PageData {
                    error: Some(format!("The page's data is unreadable: {e}")),
                    ..Default::default()
                },
                None => PageData {
                    error: Some("The page has no data.".into()),
                    ..Default::default()
                },
            }
        }
        #[cfg(not(feature = "hydrate"))]
        {
            let _ = PAGE_DATA_ID;
            PageData::default()
        }
    }

    pub async fn downloader_window(
        slug: String,
        window: u64,
    ) -> Result<Vec<(String, u64, u64)>, String> {
        found(get(format!("/board/{}/window.json?window={window}", esc(&slug))).await?)
    }

    /// A GET's JSON: the value, `None` for 404, or the reason.
    #[cfg(feature = "hydrate")]
    async fn get<T: serde::de::DeserializeOwned>(url: String) -> Result<Option<T>, String> {
        let resp = gloo_net::http::Request::get(&url)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        match resp.status() {
            200 => resp.json::<T>().await.map(Some).map_err(|e| e.to_string()),
            404 => Ok(None),
            status => Err(format!("The tracker answered {status}.")),
        }
    }

    /// Neither the server nor the browser: nothing to fetch with.
    #[cfg(not(feature = "hydrate"))]
    async fn get<T>(_url: String) -> Result<Option<T>, String> {
        Err("No way to fetch page data in this build.".into())
    }

    /// Data that must exist: a 404 (the project is gone) is an error.
    fn found<T>(got: Option<T>) -> Result<T, String> {
        got.ok_or_else(|| "No such project.".to_string())
    }

    /// `slug` as a path segment.
    fn esc(slug: &str) -> String {
        #[cfg(feature = "hydrate")]
        return String::from(js_sys::encode_uri_component(slug));
        #[cfg(not(feature = "hydrate"))]
        return slug.to_string();
    }
}
