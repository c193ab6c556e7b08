//! This process's calls to an object store (`TRACKER_STORAGE=s3://...`), for `GET /metrics`:
//! how many, how many failed, and their time (`admin::metrics`). A local directory's reads and
//! writes are not counted here.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// This process's object store calls.
pub static STORAGE_CALLS: StorageCalls = StorageCalls::new();

/// Object store calls: count, failures, and their summed time.
pub struct StorageCalls {
    calls: AtomicU64,
    errors: AtomicU64,
    micros: AtomicU64,
}

impl StorageCalls {
    const fn new() -> Self {
        Self {
            calls: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            micros: AtomicU64::new(0),
        }
    }

    /// Records one call that took `took`, and whether it failed.
    pub fn record(&self, took: Duration, failed: bool) {
        self.calls.fetch_add(1, Relaxed);
        if failed {
            self.errors.fetch_add(1, Relaxed);
        }
        self.micros.fetch_add(took.as_micros() as u64, Relaxed);
    }

    /// Calls so far, failed calls, and their summed time in seconds.
    pub fn read(&self) -> (u64, u64, f64) {
        (
            self.calls.load(Relaxed),
            self.errors.load(Relaxed),
            self.micros.load(Relaxed) as f64 / 1e6,
        )
    }
}
