//! What every part of the store may use and nothing of it defines: the JSON text of a string,
//! a page of a sorted set, the queue parts of a claim order. It imports nothing from the
//! store's features.

use super::error::StoreResult;
use crate::keys::{ProjectKeys, QUEUES};
use fred::prelude::*;

/// The JSON text of `s` (a quoted, escaped string).
pub(super) fn json_text(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// One page of `ZSCAN key cursor COUNT 1000`: the next cursor ("0" at the end) and the members.
pub(super) async fn zscan_page(
    client: &Client,
    key: &str,
    cursor: &str,
) -> StoreResult<(String, Vec<String>)> {
    let (next, flat): (String, Vec<String>) = client
        .custom(fred::cmd!("ZSCAN"), vec![key, cursor, "COUNT", "1000"])
        .await?;
    Ok((next, flat.into_iter().step_by(2).collect()))
}

/// The keys of the queue parts in claim order `order` (meta `queues`; `None`: the default), in
/// that order. Personal queues are not in it (see `Store::personal_queues`).
pub(super) fn queue_part_keys(k: &ProjectKeys, order: Option<&str>) -> Vec<String> {
    queue_parts(order).iter().map(|p| k.key(p)).collect()
}

/// The names of the queue parts (not personal queues) in claim order `order`.
pub fn queue_parts(order: Option<&str>) -> Vec<String> {
    let default = QUEUES.join(",");
    order
        .unwrap_or(&default)
        .split([',', ' '])
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}
