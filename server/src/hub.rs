//! The live hub: one Redis pub/sub client per process, following every project's shard channel
//! ([`channels`]), folded into at most [`FRAMES_PER_SECOND`] frames per project, each serialised
//! once and shared by every watcher of the project.
//!
//! Watchers (the websocket in [`crate::api::live`], the compatibility feed in
//! [`crate::api::feed`]) subscribe with [`Hub::watch`] *before* they read the history or a
//! snapshot, then skip what they already sent by sequence number: every event is either in
//! what they read or in a later frame, never lost between the two.

pub mod channels;
mod feed;
mod frame;
pub mod history;

pub use feed::{
    frame_interval, FRAMES_PER_SECOND, FRAME_INTERVAL, MIN_FRAMES_PER_SECOND, WATCHER_BUFFER,
    WRITE_BUDGET,
};
use feed::{Feed, Snapshot};
pub use frame::{events_frame, sse_chunk, Frame, LegacyEvent, LegacyRates};

use crate::store::{now_ms, Store, StoreResult, PAGE_DOWNLOADERS, PAGE_RECENT};
use app::model::{DoneEvent, LiveMessage, TrackerStats};
use axum::body::Bytes;
use fred::prelude::*;
use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};
use tokio::sync::{broadcast, mpsc};

/// How often the tracker statistics (per-minute figures of the last hour, which the events do not
/// carry) of each watched project that had events since are read again, once for all its
/// watchers, and sent with its next frame (or alone, when no event is pending).
pub const FIGURES_INTERVAL: Duration = Duration::from_secs(5);

/// How often they are read for a watched project without events: minutes leave the hour.
pub const IDLE_FIGURES_INTERVAL: Duration = Duration::from_secs(60);

/// What a watcher receives.
#[derive(Clone)]
pub enum Signal {
    /// New events.
    Frame(Arc<Frame>),
    /// The subscription was interrupted and events may be lost: start over from a snapshot.
    Resync,
}

/// The per-process fan-out of project events; cheap to clone.
#[derive(Clone, Default)]
pub struct Hub {
    feeds: Arc<Mutex<HashMap<String, Feed>>>,
    subscriber: Option<fred::clients::SubscriberClient>,
    /// Held while (un)subscribing, so that syncs never race (see [`channels`]).
    syncing: Arc<tokio::sync::Mutex<()>>,
    /// Cancelled by [`Hub::stop`]: ends the periodic sync.
    stopped: tokio_util::sync::CancellationToken,
}

impl Hub {
    /// Subscribes to every project's events and starts folding them into frames.
    pub async fn start(store: &Store) -> StoreResult<Self> {
        let subscriber = store.subscriber()?;
        let hub = Hub {
            subscriber: Some(subscriber.clone()),
            ..Hub::default()
        };
        subscriber.init().await?;
        let messages = subscriber.message_rx();
        tokio::spawn(hub.clone().run(store.clone(), messages));
        hub.resubscribe_after_reconnects();
        hub.sync_projects(store).await?;
        hub.keep_in_sync(store.clone());
        Ok(hub)
    }

    /// Receives published events and sends frames when they are due, and every
    /// [`FIGURES_INTERVAL`] reads the tracker statistics of the busy projects, until the client
    /// closes.
    async fn run(self, store: Store, mut messages: broadcast::Receiver<fred::types::Message>) {
        let keys = store.keys().clone();
        let mut due: Option<Instant> = None;
        let mut figures_tick = tokio::time::interval(FIGURES_INTERVAL);
        figures_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (figures_tx, mut figures_rx) = mpsc::channel::<(String, TrackerStats)>(64);
        loop {
            let wake = due.map(tokio::time::Instant::from_std);
            tokio::select! {
                msg = messages.recv() => match msg {
                    Ok(msg) => {
                        let Some(slug) = keys.slug_of_events_channel(&msg.channel) else {
                            continue;
                        };
                        let Some(payload) = msg.value.as_str() else { continue };
                        let next = self.receive(slug, &payload, Instant::now());
                        due = earliest(due, next);
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "hub fell behind redis; resyncing watchers");
                        self.resync_all();
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                _ = tokio::time::sleep_until(wake.unwrap_or_else(tokio::time::Instant::now)),
                    if wake.is_some() => {
                    due = self.flush_due(Instant::now());
                }
                _ = figures_tick.tick() => {
                    let busy = self.figures_due(Instant::now());
                    if !busy.is_empty() {
                        // Read beside the loop: frames keep going out meanwhile.
                        let (store, tx) = (store.clone(), figures_tx.clone());
                        tokio::spawn(async move {
                            for slug in busy {
                                match store.figures().live_figures(&slug, now_ms()).await {
                                    Ok(figures) => {
                                        if tx.send((slug, figures)).await.is_err() {
                                            return;
                                        }
                                    }
                                    Err(e) => {
                                        tracing::warn!(error = %e, slug, "reading tracker statistics");
                                    }
                                }
                            }
                        });
                    }
                }
                Some((slug, figures)) = figures_rx.recv() => {
                    let next = self.set_figures(&slug, figures, Instant::now());
                    due = earliest(due, next);
                }
            }
        }
    }

    /// Closes the subscription.
    pub async fn stop(&self) {
        self.stopped.cancel();
        if let Some(s) = &self.subscriber {
            let _ = s.quit().await;
        }
    }

    /// A receiver of `slug`'s frames. Subscribe before reading history or a snapshot, after
    /// [`Hub::ensure_subscribed`].
    pub fn watch(&self, slug: &str) -> broadcast::Receiver<Signal> {
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        feeds.retain(|_, f| f.tx.receiver_count() > 0);
        feeds
            .entry(slug.to_string())
            .or_insert_with(Feed::new)
            .tx
            .subscribe()
    }

    /// The projects someone watches now.
    fn watched(&self) -> HashSet<String> {
        let feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        feeds
            .iter()
            .filter(|(_, f)| f.tx.receiver_count() > 0)
            .map(|(slug, _)| slug.clone())
            .collect()
    }

    /// How many of `slug`'s frames the slowest watcher has not taken yet.
    pub fn queued(&self, slug: &str) -> usize {
        let feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        feeds.get(slug).map_or(0, |f| f.tx.len())
    }

    /// Sequence number of the last event sent to `slug`'s watchers (0 when unwatched).
    pub fn flushed(&self, slug: &str) -> u64 {
        let feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        feeds.get(slug).map_or(0, |f| f.flushed)
    }

    /// Takes a published payload of `slug` at `now`: sends a frame at once if the last one is
    /// at least [`frame_interval`] old, else keeps the events; returns when pending events are
    /// due.
    ///
    /// ```text
    /// {...DoneEvent...},{...DoneEvent...}     one or more events joined by commas
    /// ```
    pub fn receive(&self, slug: &str, payload: &str, now: Instant) -> Option<Instant> {
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        // Nobody watches: whoever starts to will read these from the history.
        let feed = feeds.get_mut(slug)?;
        match serde_json::from_str::<Vec<DoneEvent>>(&format!("[{payload}]")) {
            Ok(events) => {
                feed.pending.extend(events);
                feed.busy = true;
            }
            Err(e) => {
                tracing::error!(error = %e, slug, "unreadable event payload; resyncing watchers");
                let _ = feed.tx.send(Signal::Resync);
                return None;
            }
        }
        feed.flush_if_due(now)
    }

    /// Sends every frame due at `now`; returns when the next pending events are due.
    pub fn flush_due(&self, now: Instant) -> Option<Instant> {
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = None;
        for feed in feeds.values_mut() {
            next = earliest(next, feed.flush_if_due(now));
        }
        next
    }

    /// The watched projects whose statistics are to be read at `now`: those that had events
    /// since the last read, and the others every [`IDLE_FIGURES_INTERVAL`]. Counts them as read.
    fn figures_due(&self, now: Instant) -> Vec<String> {
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        feeds
            .iter_mut()
            .filter_map(|(slug, f)| {
                let busy = std::mem::take(&mut f.busy);
                let stale = f
                    .figures_read
                    .is_none_or(|t| now.duration_since(t) >= IDLE_FIGURES_INTERVAL);
                let due = (busy || stale) && f.tx.receiver_count() > 0;
                if due {
                    f.figures_read = Some(now);
                }
                due.then(|| slug.clone())
            })
            .collect()
    }

    /// Keeps `figures`, `slug`'s tracker statistics just read, for its next frame: at once (a
    /// frame of them alone) if one may go out at `now`; else returns when the frame is due.
    pub fn set_figures(&self, slug: &str, figures: TrackerStats, now: Instant) -> Option<Instant> {
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        let feed = feeds.get_mut(slug)?;
        feed.latest = Some(Arc::new(figures));
        feed.figures_fresh = true;
        feed.flush_if_due(now)
    }

    /// The tracker statistics last read for `slug`'s watchers (`None` while nobody watches or
    /// before the first read): the compatibility feed's rates and queue sizes.
    pub fn latest_figures(&self, slug: &str) -> Option<Arc<TrackerStats>> {
        let feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        feeds.get(slug)?.latest.clone()
    }

    /// The compatibility feed's chunk of `events` of `slug` ([`sse_chunk`]), with the tracker
    /// statistics last read for it.
    pub fn sse_chunk(&self, slug: &str, events: &[DoneEvent]) -> String {
        sse_chunk(events, self.latest_figures(slug).as_deref())
    }

    /// Tells every watcher to start over from a snapshot (after a reconnect, or when Redis
    /// stops or starts answering: a watcher that cannot read one then closes, and its viewer
    /// shows it is reconnecting).
    pub fn resync_all(&self) {
        let feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        for feed in feeds.values() {
            let _ = feed.tx.send(Signal::Resync);
        }
    }

    /// A snapshot message of `slug` that includes every event published before `not_before`
    /// (when the watcher subscribed, or noticed it fell behind), and its sequence number.
    /// Watchers asking at about the same time share one read. `None` when the project is gone
    /// or Redis failed.
    pub async fn snapshot(
        &self,
        store: &Store,
        slug: &str,
        not_before: Instant,
    ) -> Option<(u64, Bytes)> {
        let cell = {
            let feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
            feeds.get(slug).map(|f| f.snapshot.clone())
        }
        .unwrap_or_default();
        let mut cached = cell.lock().await;
        if let Some(s) = cached.as_ref().filter(|s| s.started >= not_before) {
            return Some((s.seq, s.text.clone()));
        }
        let started = Instant::now();
        let board = match store
            .figures()
            .leaderboard(slug, PAGE_DOWNLOADERS, PAGE_RECENT)
            .await
        {
            Ok(board) => board?,
            Err(e) => {
                tracing::error!(error = %e, slug, "reading a snapshot");
                return None;
            }
        };
        let seq = board.seq;
        let text =
            crate::websocket::text(&serde_json::to_string(&LiveMessage::Snapshot { board }).ok()?);
        *cached = Some(Snapshot {
            started,
            seq,
            text: text.clone(),
        });
        Some((seq, text))
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(seqs: std::ops::RangeInclusive<u64>) -> String {
        seqs.map(|seq| {
            format!(
                r#"{{"seq":{seq},"time":1,"downloader":"d","items":["i{seq}"],"bytes":1,"counts":{{"todo":0,"out":0,"done":{seq}}}}}"#
            )
        })
        .collect::<Vec<_>>()
        .join(",")
    }

    fn frames(rx: &mut broadcast::Receiver<Signal>) -> Vec<(u64, u64)> {
        std::iter::from_fn(|| match rx.try_recv() {
            Ok(Signal::Frame(f)) => Some((f.first(), f.last())),
            _ => None,
        })
        .collect()
    }

    #[test]
    fn events_within_a_frame_interval_go_out_together() {
        let hub = Hub::default();
        let mut rx = hub.watch("p");
        let t0 = Instant::now();
        assert_eq!(hub.receive("p", &payload(1..=1), t0), None, "first at once");
        let due = hub.receive("p", &payload(2..=3), t0 + Duration::from_millis(10));
        assert_eq!(due, Some(t0 + FRAME_INTERVAL));
        hub.receive("p", &payload(4..=4), t0 + Duration::from_millis(20));
        assert_eq!(frames(&mut rx), [(1, 1)]);
        assert_eq!(hub.flush_due(t0 + Duration::from_millis(200)), due);
        assert_eq!(frames(&mut rx), []);
        assert_eq!(hub.flush_due(t0 + FRAME_INTERVAL), None);
        assert_eq!(frames(&mut rx), [(2, 4)]);
    }

    #[test]
    fn many_watchers_get_fewer_frames_but_at_least_two_a_second() {
        assert_eq!(frame_interval(1), FRAME_INTERVAL);
        assert_eq!(frame_interval(2_000), FRAME_INTERVAL);
        assert_eq!(frame_interval(3_000), Duration::from_millis(375));
        assert_eq!(frame_interval(1_000_000), Duration::from_millis(500));

        let hub = Hub::default();
        let mut watchers: Vec<_> = (0..5_000).map(|_| hub.watch("p")).collect();
        let t0 = Instant::now();
        assert_eq!(hub.receive("p", &payload(1..=1), t0), None, "first at once");
        let due = hub.receive("p", &payload(2..=2), t0 + Duration::from_millis(10));
        assert_eq!(due, Some(t0 + Duration::from_millis(500)));
        assert_eq!(hub.flush_due(t0 + FRAME_INTERVAL), due, "not at 250 ms");
        assert_eq!(hub.flush_due(t0 + Duration::from_millis(500)), None);
        assert_eq!(frames(&mut watchers[4_999]), [(1, 1), (2, 2)]);
    }

    #[test]
    fn tracker_statistics_ride_the_next_frame_or_go_alone() {
        let hub = Hub::default();
        let mut rx = hub.watch("p");
        let figures = |n| TrackerStats {
            unique_downloaders_30d: n,
            ..Default::default()
        };
        let t0 = Instant::now();
        hub.receive("p", &payload(1..=1), t0);
        assert_eq!(hub.figures_due(t0), ["p"], "events came");
        assert!(hub.figures_due(t0).is_empty(), "and were counted once");
        // Pending events: the statistics wait for their frame and go out with it.
        hub.receive("p", &payload(2..=2), t0 + Duration::from_millis(10));
        let due = hub.set_figures("p", figures(3), t0 + Duration::from_millis(20));
        assert_eq!(due, Some(t0 + FRAME_INTERVAL));
        assert_eq!(hub.flush_due(t0 + FRAME_INTERVAL), None);
        let sent: Vec<_> = std::iter::from_fn(|| match rx.try_recv() {
            Ok(Signal::Frame(f)) => Some(f),
            _ => None,
        })
        .collect();
        assert_eq!(sent.len(), 2);
        let read = |f: &Frame| serde_json::from_str::<LiveMessage>(f.json()).unwrap();
        assert!(matches!(
            read(&sent[0]),
            LiveMessage::Events { tracker: None, .. }
        ));
        match read(&sent[1]) {
            LiveMessage::Events {
                events,
                tracker: Some(t),
            } => assert!(events.len() == 1 && t == figures(3)),
            other => panic!("{other:?}"),
        }
        // No events pending: a frame of the statistics alone, which moves no sequence number.
        let later = t0 + Duration::from_secs(5);
        assert_eq!(hub.set_figures("p", figures(4), later), None);
        match rx.try_recv() {
            Ok(Signal::Frame(f)) => {
                assert!(f.is_figures_only());
                assert!(
                    matches!(read(&f), LiveMessage::Events { events, tracker: Some(t) }
                    if events.is_empty() && t == figures(4))
                );
            }
            _ => panic!("no frame"),
        }
        assert_eq!(hub.flushed("p"), 2);
        assert_eq!(
            hub.figures_due(later),
            ["p"],
            "event 2 came since the first look"
        );
        assert!(hub.figures_due(later).is_empty(), "and nothing after it");
        // Without events, a watched project's statistics are read again every minute.
        assert_eq!(hub.figures_due(later + IDLE_FIGURES_INTERVAL), ["p"]);
        assert!(hub.figures_due(later + IDLE_FIGURES_INTERVAL).is_empty());
    }

    #[test]
    fn unwatched_projects_keep_nothing_and_bad_payloads_resync() {
        let hub = Hub::default();
        assert_eq!(hub.receive("q", &payload(1..=5), Instant::now()), None);
        let mut rx = hub.watch("p");
        hub.receive("p", "{not json", Instant::now());
        assert!(matches!(rx.try_recv(), Ok(Signal::Resync)));
    }
}
