//! Block lists, per project or global: blocking and lifting IPs and downloader names.

use super::{invalid, Actor, OpsError, OpsResult};
use crate::store::{now_ms, BlockEntry, BlockKind, Store};

/// The longest reason kept (longer ones are cut).
const MAX_REASON: usize = 500;

/// The longest block, in hours (about 120 years).
const MAX_HOURS: u64 = 1 << 20;

/// The kind named `ip` or `dl` (downloader name).
pub fn parse_kind(kind: &str) -> OpsResult<BlockKind> {
    match kind {
        "ip" => Ok(BlockKind::Ip),
        "dl" => Ok(BlockKind::Downloader),
        _ => Err(invalid("kind is ip or dl.")),
    }
}

/// The name of `kind` in the audit log: `ip` or `dl`.
fn kind_name(kind: BlockKind) -> &'static str {
    match kind {
        BlockKind::Ip => "ip",
        BlockKind::Downloader => "dl",
    }
}

/// What to block, and why.
#[derive(Debug, Default)]
pub struct NewBlock {
    /// A project's lists (none: the global ones).
    pub project: Option<String>,
    /// Why (cut to 500 characters).
    pub reason: String,
    /// Hours until it lifts (none: never).
    pub hours: Option<u64>,
}

/// Checks the project named, if any, exists.
async fn check_project(store: &Store, project: Option<&str>) -> OpsResult<()> {
    if let Some(slug) = project {
        super::project(store, slug).await?;
    }
    Ok(())
}

/// Blocks `value` (trimmed; an IP address for [`BlockKind::Ip`]); the value blocked.
pub async fn block(
    store: &Store,
    actor: &Actor,
    kind: BlockKind,
    value: &str,
    how: NewBlock,
) -> OpsResult<String> {
    check_project(store, how.project.as_deref()).await?;
    let value = value.trim();
    if value.is_empty() || value.len() > 256 {
        return Err(invalid("The value is 1 to 256 characters."));
    }
    if kind == BlockKind::Ip && value.parse::<std::net::IpAddr>().is_err() {
        return Err(invalid("Not an IP address."));
    }
    let now = now_ms();
    let entry = BlockEntry {
        reason: how.reason.chars().take(MAX_REASON).collect(),
        by: actor.name.clone(),
        t: now,
        expires: how
            .hours
            .map(|h| now + h.min(MAX_HOURS) * 3_600_000)
            .unwrap_or(0),
    };
    store
        .projects()
        .block(how.project.as_deref(), kind, value, &entry)
        .await?;
    let detail = format!("{} {value}", kind_name(kind));
    actor
        .record(
            store,
            "block",
            how.project.as_deref().unwrap_or(""),
            1,
            detail,
        )
        .await?;
    Ok(value.to_string())
}

/// Lifts the block of `value` (as it was stored), or [`OpsError::NotFound`].
pub async fn unblock(
    store: &Store,
    actor: &Actor,
    project: Option<&str>,
    kind: BlockKind,
    value: &str,
) -> OpsResult<()> {
    check_project(store, project).await?;
    if !store.projects().unblock(project, kind, value).await? {
        return Err(OpsError::NotFound(format!("{value} is not blocked.")));
    }
    let detail = format!("{} {value}", kind_name(kind));
    actor
        .record(store, "unblock", project.unwrap_or(""), 1, detail)
        .await?;
    Ok(())
}
