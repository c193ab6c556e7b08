//! The store's errors: what a failed Redis call becomes, whether it may be retried, and this
//! process's count of them by kind (for `/metrics`).

use super::refusal::Refusal;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Store failures; client mistakes are reported by the API layer before calling the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Redis failed or is unreachable.
    #[error("redis: {0}")]
    Redis(fred::error::Error),
    /// Redis cannot answer now: the connection is down or reconnecting, a command outlived its
    /// timeout, or a cluster is failing over (`CLUSTERDOWN`, `TRYAGAIN`, `LOADING`, ...). The
    /// caller may retry shortly; a command that timed out may or may not have run.
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    /// Redis refused a write: its memory is at `maxmemory`. Nothing was changed (every
    /// writing script is refused before it starts); writes succeed again once memory frees.
    #[error("redis is full (used memory > maxmemory): writes are refused until memory frees or maxmemory is raised")]
    Full,
    /// A script answered something its wrapper does not expect.
    #[error("unexpected reply from script {script}: {detail}")]
    Reply {
        /// The script.
        script: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The project does not exist.
    #[error("no such project")]
    NoProject,
    /// The project exists already.
    #[error("project exists")]
    ProjectExists,
    /// A project of that slug was destroyed and its files are still being deleted.
    #[error("a destroyed project of that slug still has files on disk")]
    BeingRemoved,
    /// A segment file on disk could not be read or written (see [`offload`]).
    #[error("offload files: {0}")]
    Disk(String),
    /// A script refused the request (see [`Refusal`] for the codes); nothing was changed,
    /// except where the refusal says otherwise.
    #[error("refused: {0}")]
    Refused(Refusal),
}

impl StoreError {
    /// The kind of a failure, as `/metrics` labels it: `full` (Redis at `maxmemory`),
    /// `unavailable`, or `other`.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Full => "full",
            StoreError::Unavailable(_) => "unavailable",
            _ => "other",
        }
    }
}

/// Every failed Redis call of the tracker becomes a `StoreError` here, and is counted
/// ([`REDIS_ERRORS`], for `/metrics`).
impl From<fred::error::Error> for StoreError {
    fn from(e: fred::error::Error) -> Self {
        let e = if is_oom(e.details()) {
            Self::Full
        } else if e.details().starts_with("NOPROJECT") {
            // A script's refusal to write into a project whose `meta` is gone (_lib must_exist).
            Self::NoProject
        } else if is_unavailable(&e) {
            Self::Unavailable(e.to_string())
        } else {
            Self::Redis(e)
        };
        REDIS_ERRORS.count(&e);
        e
    }
}

/// Whether a Redis error reply is the refusal of a write past `maxmemory`
/// (`OOM command not allowed when used memory > 'maxmemory'.`).
pub fn is_oom(reply: &str) -> bool {
    reply.starts_with("OOM ")
}

/// Whether a Redis error means "not now" rather than "wrong": no connection, a timeout, or a
/// server (or cluster slot) that is starting, failing over or read-only for a moment.
pub fn is_unavailable(e: &fred::error::Error) -> bool {
    use fred::error::ErrorKind;
    const TRANSIENT: [&str; 6] = [
        "CLUSTERDOWN",
        "TRYAGAIN",
        "LOADING",
        "MASTERDOWN",
        "READONLY",
        "BUSY",
    ];
    matches!(
        e.kind(),
        ErrorKind::IO
            | ErrorKind::Timeout
            | ErrorKind::Canceled
            | ErrorKind::Backpressure
            | ErrorKind::Routing
            | ErrorKind::Cluster
    ) || TRANSIENT
        .iter()
        .any(|t| e.details().trim_start().starts_with(t))
        // fred's answer to a command issued while it holds no connection (Redis has just
        // died and the reconnection is pending): kind `Unknown`, and the command was never sent.
        || (*e.kind() == ErrorKind::Unknown && e.details().starts_with("Failed to route command"))
}

/// Result of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// This process's failed Redis calls, by kind (see [`ErrorCounts::count`]).
pub static REDIS_ERRORS: ErrorCounts = ErrorCounts::new();

/// Failed Redis calls of this process, by kind: `full` (Redis at `maxmemory`), `unavailable`
/// (no connection, a timeout, a cluster moving), `other`.
pub struct ErrorCounts {
    full: AtomicU64,
    unavailable: AtomicU64,
    other: AtomicU64,
}

impl ErrorCounts {
    const fn new() -> Self {
        Self {
            full: AtomicU64::new(0),
            unavailable: AtomicU64::new(0),
            other: AtomicU64::new(0),
        }
    }

    /// Counts one failed call, by the kind of its error.
    pub fn count(&self, e: &StoreError) {
        let slot = match e {
            StoreError::Full => &self.full,
            StoreError::Unavailable(_) => &self.unavailable,
            _ => &self.other,
        };
        slot.fetch_add(1, Relaxed);
    }

    /// Each kind's count so far.
    pub fn read(&self) -> [(&'static str, u64); 3] {
        [
            ("full", self.full.load(Relaxed)),
            ("unavailable", self.unavailable.load(Relaxed)),
            ("other", self.other.load(Relaxed)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use fred::error::{Error, ErrorKind};

    #[test]
    fn a_command_with_no_connection_to_route_it_to_is_unavailable_not_an_internal_error() {
        // What fred 10 answers while Redis is being reconnected (`router/commands.rs`).
        let e = Error::new(ErrorKind::Unknown, "Failed to route command.");
        assert!(super::is_unavailable(&e));
        assert!(!super::is_unavailable(&Error::new(
            ErrorKind::Unknown,
            "ERR something else"
        )));
    }
}
