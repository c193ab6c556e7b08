//! One watched project's feed: the events and statistics waiting for its next frame, when that
//! frame may go out (the frame rate, lower when thousands watch), and its shared snapshot.

use super::{Frame, Signal};
use app::model::{DoneEvent, TrackerStats};
use axum::body::Bytes;
use std::{
    sync::Arc,
    time::{Duration, Instant},
};
use tokio::sync::broadcast;

/// The most frames a project's watchers get per second; events in between are coalesced.
pub const FRAMES_PER_SECOND: u32 = 4;

/// The shortest time between two frames of one project.
pub const FRAME_INTERVAL: Duration = Duration::from_millis(1000 / FRAMES_PER_SECOND as u64);

/// Socket writes a second one project's frames may cost before its frame rate drops: a frame
/// is one write per watcher, and on loopback that write (mostly the kernel's TCP path) is most
/// of what a watcher costs.
pub const WRITE_BUDGET: u64 = 8_000;

/// The fewest frames a second however many watch: an event waits at most 500 ms for its frame.
pub const MIN_FRAMES_PER_SECOND: u64 = 2;

/// The time between two frames of a project with `watchers` watchers: [`FRAME_INTERVAL`] while
/// frames x watchers fits in [`WRITE_BUDGET`] (up to 2,000 watchers), then longer so that it
/// still fits, down to [`MIN_FRAMES_PER_SECOND`] (from 4,000 watchers). Past that point the
/// server's cost grows with the watchers again, at half the rate.
pub fn frame_interval(watchers: usize) -> Duration {
    let ms = (watchers as u64 * 1000 / WRITE_BUDGET).clamp(
        FRAME_INTERVAL.as_millis() as u64,
        1000 / MIN_FRAMES_PER_SECOND,
    );
    Duration::from_millis(ms)
}

/// How many frames a watcher may fall behind (4 s at the full rate) before it gets a fresh
/// snapshot instead of the frames it missed.
pub const WATCHER_BUFFER: usize = 16;

/// A snapshot message shared by the watchers that ask for one at about the same time.
pub(super) struct Snapshot {
    /// When its read began: it includes every event published before then.
    pub(super) started: Instant,
    pub(super) seq: u64,
    /// The message, framed ([`crate::websocket::text`]).
    pub(super) text: Bytes,
}

/// One watched project.
pub(super) struct Feed {
    pub(super) tx: broadcast::Sender<Signal>,
    /// Events received and not yet sent, in arrival order.
    pub(super) pending: Vec<DoneEvent>,
    pub(super) last_frame: Option<Instant>,
    /// Sequence number of the last event sent.
    pub(super) flushed: u64,
    pub(super) snapshot: Arc<tokio::sync::Mutex<Option<Snapshot>>>,
    /// The tracker statistics last read: every frame's compatibility events carry their rates
    /// and queue sizes; the websocket message carries them once, in the next frame.
    pub(super) latest: Option<Arc<TrackerStats>>,
    /// Whether `latest` was read since the last frame (the next one sends it to viewers).
    pub(super) figures_fresh: bool,
    /// Whether events came since the statistics were last read.
    pub(super) busy: bool,
    /// When the statistics were last read (`None`: not yet).
    pub(super) figures_read: Option<Instant>,
}

impl Feed {
    pub(super) fn new() -> Self {
        Self {
            tx: broadcast::channel(WATCHER_BUFFER).0,
            pending: Vec::new(),
            last_frame: None,
            flushed: 0,
            snapshot: Default::default(),
            latest: None,
            figures_fresh: false,
            busy: false,
            figures_read: None,
        }
    }

    /// When the pending events (or statistics) may go out.
    fn due(&self, now: Instant) -> Option<Instant> {
        if self.pending.is_empty() && !self.figures_fresh {
            return None;
        }
        Some(
            self.last_frame
                .map_or(now, |t| t + frame_interval(self.tx.receiver_count())),
        )
    }

    /// Sends the pending events, and the statistics if read since the last frame, as one frame.
    fn flush(&mut self, now: Instant) {
        let mut events = std::mem::take(&mut self.pending);
        events.sort_by_key(|e| e.seq);
        events.dedup_by_key(|e| e.seq);
        self.last_frame = Some(now);
        self.flushed = events.last().map_or(self.flushed, |e| e.seq);
        let fresh = std::mem::take(&mut self.figures_fresh);
        let frame = Frame::new(events, fresh, self.latest.clone());
        let _ = self.tx.send(Signal::Frame(Arc::new(frame)));
    }

    /// Sends a frame if one is due at `now`; else returns when one is.
    pub(super) fn flush_if_due(&mut self, now: Instant) -> Option<Instant> {
        match self.due(now) {
            Some(due) if due <= now => {
                self.flush(now);
                None
            }
            due => due,
        }
    }
}
