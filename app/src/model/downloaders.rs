//! The downloaders table's types: a row, a ranked row, a page of `GET /SLUG/downloaders.json`
//! and its orders.

use serde::{Deserialize, Serialize};

/// One row of the downloaders table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DownloaderRow {
    /// Downloader name.
    pub name: String,
    /// Items done.
    pub items: u64,
    /// Bytes done.
    pub bytes: u64,
    /// Last completion, milliseconds since the epoch (0: unknown).
    #[serde(default)]
    pub last_seen: u64,
    /// Script version of the last completion.
    #[serde(default)]
    pub version: String,
    /// Items done in the leaderboard's rate window ([`Leaderboard::window`]).
    #[serde(default)]
    pub window_items: u64,
    /// Bytes done in the rate window.
    #[serde(default)]
    pub window_bytes: u64,
}

/// One page of a project's downloaders, as `GET /SLUG/downloaders.json` answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DownloaderPage {
    /// Downloaders matching the search, in all.
    pub total: u64,
    /// Downloaders of the project, in all.
    pub count: u64,
    /// The rate window of the rows' `window_items` / `window_bytes`, minutes.
    pub window: u64,
    /// Server time, milliseconds since the epoch.
    pub now: u64,
    /// The page's rows with their rank by items (1 = most).
    pub rows: Vec<RankedRow>,
}

/// A downloader with its rank by items done: the row's fields and `rank`, in one JSON object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "FlatRankedRow")]
pub struct RankedRow {
    /// 1 for the downloader with the most items.
    pub rank: u64,
    /// The row.
    #[serde(flatten)]
    pub row: DownloaderRow,
}

/// A [`RankedRow`] as read. serde reads a `flatten`ed field by buffering the object (its
/// `Content` type, a second reader of every field in the Wasm); the same fields listed here are
/// read in one pass.
#[derive(Deserialize)]
struct FlatRankedRow {
    rank: u64,
    name: String,
    items: u64,
    bytes: u64,
    #[serde(default)]
    last_seen: u64,
    #[serde(default)]
    version: String,
    #[serde(default)]
    window_items: u64,
    #[serde(default)]
    window_bytes: u64,
}

impl From<FlatRankedRow> for RankedRow {
    fn from(f: FlatRankedRow) -> Self {
        Self {
            rank: f.rank,
            row: DownloaderRow {
                name: f.name,
                items: f.items,
                bytes: f.bytes,
                last_seen: f.last_seen,
                version: f.version,
                window_items: f.window_items,
                window_bytes: f.window_bytes,
            },
        }
    }
}

/// The orders of a downloaders page (`sort=` of `downloaders.json`), each in its natural
/// direction: most first, names A to Z.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// By items done (the rank).
    Rank,
    /// By name, A first.
    Name,
    /// By bytes done.
    Bytes,
    /// By items in the rate window.
    ItemsRate,
    /// By bytes in the rate window.
    BytesRate,
    /// By last completion, newest first.
    Seen,
    /// By version, highest first.
    Version,
}

impl SortBy {
    /// The `sort=` value.
    pub fn key(self) -> &'static str {
        match self {
            SortBy::Rank => "rank",
            SortBy::Name => "name",
            SortBy::Bytes => "bytes",
            SortBy::ItemsRate => "items_rate",
            SortBy::BytesRate => "bytes_rate",
            SortBy::Seen => "seen",
            SortBy::Version => "version",
        }
    }

    /// The order a `sort=` value names (`items` is the rank too).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "rank" | "items" => Self::Rank,
            "name" => Self::Name,
            "bytes" => Self::Bytes,
            "items_rate" => Self::ItemsRate,
            "bytes_rate" => Self::BytesRate,
            "seen" => Self::Seen,
            "version" => Self::Version,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranked_rows_are_one_flat_object() {
        let row = RankedRow {
            rank: 3,
            row: DownloaderRow {
                name: "alice".into(),
                items: 5,
                bytes: 9,
                version: "2".into(),
                ..Default::default()
            },
        };
        let text = serde_json::to_string(&row).unwrap();
        assert!(
            text.starts_with(r#"{"rank":3,"name":"alice","items":5,"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<RankedRow>(&text).unwrap(), row);
    }
}
