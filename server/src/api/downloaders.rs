//! `GET /SLUG/downloaders.json`: every downloader of a project a page at a time, searched and
//! sorted on the server, so that the leaderboard stays light with 50,000 downloaders (its
//! snapshot carries only the top rows).

use crate::openapi::ProjectPath;
use crate::state::AppState;
use crate::web::{ApiError, ApiResult};
use app::model::{DownloaderPage, DownloaderRow, RankedRow, SortBy};
use axum::{
    extract::{Path, Query, State},
    response::{IntoResponse, Response},
    Json,
};
use std::{cmp::Reverse, collections::HashMap};

/// Rows per page when the query does not say.
pub const DEFAULT_LIMIT: usize = 100;
/// The most rows one page may ask for.
pub const MAX_LIMIT: usize = 500;
/// The longest search text.
const MAX_QUERY: usize = 200;

/// What a page asks for, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct PageQuery {
    /// Rows to skip.
    pub offset: usize,
    /// Rows to return.
    pub limit: usize,
    /// Case-insensitive part of the name (empty: everyone).
    pub q: String,
    /// Exactly this name (one row or none), e.g. the pinned downloader.
    pub name: Option<String>,
    /// The order.
    pub sort: SortBy,
    /// The order reversed.
    pub reverse: bool,
    /// The rate window, minutes.
    pub window: u64,
}

impl PageQuery {
    /// Checks the query string's fields; the reason when one is wrong.
    pub fn parse(raw: &HashMap<String, String>) -> Result<Self, String> {
        let number = |key: &str, default: u64, max: u64| -> Result<u64, String> {
            match raw.get(key) {
                None => Ok(default),
                Some(v) => v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n <= max)
                    .ok_or_else(|| format!("{key} must be a whole number from 0 to {max}.")),
            }
        };
        let q = raw.get("q").cloned().unwrap_or_default();
        if q.chars().count() > MAX_QUERY {
            return Err(format!("q is longer than {MAX_QUERY} characters."));
        }
        let sort = match raw.get("sort") {
            None => SortBy::Rank,
            Some(s) => SortBy::parse(s).ok_or(
                "sort must be one of rank, name, bytes, items_rate, bytes_rate, seen, version.",
            )?,
        };
        let reverse = match raw.get("dir").map(String::as_str) {
            None | Some("") | Some("natural") => false,
            Some("reverse") => true,
            Some(_) => return Err("dir must be natural or reverse.".into()),
        };
        let limit = number("limit", DEFAULT_LIMIT as u64, MAX_LIMIT as u64)?;
        let window = number("window", 5, 1440)?;
        if window == 0 {
            return Err("window must be from 1 to 1440 minutes.".into());
        }
        Ok(Self {
            offset: number("offset", 0, u32::MAX as u64)? as usize,
            limit: limit as usize,
            q: q.to_lowercase(),
            name: raw.get("name").cloned().filter(|n| !n.is_empty()),
            sort,
            reverse,
            window,
        })
    }
}

/// The page of `rows` (every downloader, rank order, window sums filled) that `query` asks for.
pub fn page_of(rows: &[DownloaderRow], query: &PageQuery) -> (u64, Vec<RankedRow>) {
    let mut hits: Vec<(usize, &DownloaderRow)> = rows
        .iter()
        .enumerate()
        .filter(|(_, d)| match &query.name {
            Some(name) => &d.name == name,
            None => query.q.is_empty() || d.name.to_lowercase().contains(&query.q),
        })
        .collect();
    // Each order ties on rank; a reversed order is the natural one read backwards.
    match query.sort {
        SortBy::Rank => {}
        // Each name lowered once, not at every comparison (50,000 downloaders).
        SortBy::Name => hits.sort_by_cached_key(|&(i, d)| (d.name.to_lowercase(), i)),
        SortBy::Bytes => hits.sort_by_key(|&(i, d)| (Reverse(d.bytes), i)),
        SortBy::ItemsRate => hits.sort_by_key(|&(i, d)| (Reverse(d.window_items), i)),
        SortBy::BytesRate => hits.sort_by_key(|&(i, d)| (Reverse(d.window_bytes), i)),
        SortBy::Seen => hits.sort_by_key(|&(i, d)| (Reverse(d.last_seen), i)),
        SortBy::Version => hits.sort_by(|a, b| b.1.version.cmp(&a.1.version).then(a.0.cmp(&b.0))),
    }
    if query.reverse {
        hits.reverse();
    }
    let page = hits
        .iter()
        .skip(query.offset)
        .take(query.limit)
        .map(|(i, d)| RankedRow {
            rank: *i as u64 + 1,
            row: (*d).clone(),
        })
        .collect();
    (hits.len() as u64, page)
}

/// `GET /SLUG/downloaders.json?offset=0&limit=100&q=&name=&sort=rank&dir=natural&window=5`:
/// one page of the project's downloaders ([`DownloaderPage`]). `q` finds names containing it
/// (any case), `name` one exact name; `sort` is `rank`, `name`, `bytes`, `items_rate`,
/// `bytes_rate`, `seen` or `version`, `dir=reverse` turns it round; `window` (minutes, 1-1440)
/// is the span of the rates. 400 with the reason for anything else.
#[utoipa::path(
    get,
    path = "/{slug}/downloaders.json",
    tag = "public",
    params(ProjectPath)
)]
pub async fn get_downloaders(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(raw): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let query = PageQuery::parse(&raw).map_err(ApiError::bad_request)?;
    crate::web::known_project(&state, &slug).await?;
    let (now, rows) = state
        .downloaders
        .rows(&state.store, &slug, query.window)
        .await?;
    let (total, page) = page_of(&rows, &query);
    Ok(Json(DownloaderPage {
        total,
        count: rows.len() as u64,
        window: query.window,
        now,
        rows: page,
    })
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn rows() -> Vec<DownloaderRow> {
        ["zed", "Alice", "bob", "alicia"]
            .iter()
            .enumerate()
            .map(|(i, n)| DownloaderRow {
                name: n.to_string(),
                items: 100 - i as u64 * 10,
                bytes: i as u64,
                window_items: i as u64 % 2,
                ..DownloaderRow::default()
            })
            .collect()
    }

    #[test]
    fn a_search_keeps_the_ranks_and_pages() {
        let q = PageQuery::parse(&raw(&[("q", "ALI"), ("limit", "1"), ("offset", "1")])).unwrap();
        let (total, page) = page_of(&rows(), &q);
        assert_eq!(total, 2);
        assert_eq!(page.len(), 1);
        assert_eq!((page[0].rank, page[0].row.name.as_str()), (4, "alicia"));
    }

    #[test]
    fn sorts_turn_round_and_an_exact_name_finds_one_row() {
        let q = PageQuery::parse(&raw(&[("sort", "bytes"), ("dir", "reverse")])).unwrap();
        let (_, page) = page_of(&rows(), &q);
        assert_eq!(page[0].row.name, "zed");
        let q = PageQuery::parse(&raw(&[("sort", "name")])).unwrap();
        assert_eq!(page_of(&rows(), &q).1[0].row.name, "Alice");
        let q = PageQuery::parse(&raw(&[("name", "bob")])).unwrap();
        let (total, page) = page_of(&rows(), &q);
        assert_eq!((total, page[0].rank), (1, 3));
        let q = PageQuery::parse(&raw(&[("name", "BOB")])).unwrap();
        assert_eq!(page_of(&rows(), &q).0, 0, "the exact name is exact");
    }

    #[test]
    fn bad_fields_are_refused_with_the_reason() {
        for (k, v) in [
            ("limit", "501"),
            ("limit", "x"),
            ("offset", "-1"),
            ("sort", "size"),
            ("dir", "up"),
            ("window", "0"),
            ("window", "1441"),
        ] {
            let e = PageQuery::parse(&raw(&[(k, v)])).unwrap_err();
            assert!(e.starts_with(k), "{k}={v}: {e}");
        }
        assert!(PageQuery::parse(&raw(&[("q", &"x".repeat(201))])).is_err());
    }
}
