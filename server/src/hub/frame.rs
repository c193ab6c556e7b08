//! Frames: a batch of consecutive completion events of one project, serialised once for the
//! websocket and (on first use) once for the server-sent-events feed, then shared by every watcher.

use app::model::{DoneEvent, TrackerStats, RECENT_LEN};
use axum::body::Bytes;
use serde::Serialize;
use std::{collections::BTreeMap, fmt::Write, sync::OnceLock};

/// Consecutive events of one project, with their serialised forms.
pub struct Frame {
    events: Vec<DoneEvent>,
    /// The websocket message, framed ([`crate::websocket::text`]).
    ws: Bytes,
    sse: OnceLock<Bytes>,
}

impl Frame {
    /// A frame of `events` (sorted by `seq`, no repeats), with the project's tracker statistics
    /// when they were read again since the last frame. A frame without events carries only
    /// the statistics (see [`Frame::is_figures_only`]).
    pub(super) fn new(events: Vec<DoneEvent>, tracker: Option<&TrackerStats>) -> Self {
        let ws = crate::websocket::text(&message(&events, tracker));
        Self {
            events,
            ws,
            sse: OnceLock::new(),
        }
    }

    /// Whether the frame only brings new tracker statistics: no events, nothing for the
    /// compatibility feed, and no sequence number to check.
    pub fn is_figures_only(&self) -> bool {
        self.events.is_empty()
    }

    /// Sequence number of the first event.
    pub fn first(&self) -> u64 {
        self.events.first().map_or(0, |e| e.seq)
    }

    /// Sequence number of the last event.
    pub fn last(&self) -> u64 {
        self.events.last().map_or(0, |e| e.seq)
    }

    /// The events, oldest first.
    pub fn events(&self) -> &[DoneEvent] {
        &self.events
    }

    /// The websocket message, `{"type":"events","events":[...]}`, framed: the bytes every
    /// viewer's socket is sent.
    pub fn ws(&self) -> Bytes {
        self.ws.clone()
    }

    /// The websocket message's text (the JSON inside [`Frame::ws`]).
    #[cfg(test)]
    pub fn json(&self) -> &str {
        crate::websocket::text_payload(&self.ws).unwrap_or_default()
    }

    /// The compatibility feed's chunk (see [`sse_chunk`]), built by the first watcher that asks.
    pub fn sse(&self) -> Bytes {
        self.sse
            .get_or_init(|| sse_chunk(&self.events).into())
            .clone()
    }

    /// The events after `seq`, or `None` when there are none.
    pub fn after(&self, seq: u64) -> Option<&[DoneEvent]> {
        let from = self.events.partition_point(|e| e.seq <= seq);
        (from < self.events.len()).then(|| &self.events[from..])
    }
}

/// The websocket form of some events, `{"type":"events","events":[...]}`, as
/// [`app::model::LiveMessage::Events`] reads it. Every viewer is sent every frame, so only what a
/// viewer shows goes out (see [`DoneEvent::n`]): item names and user agent for the last
/// [`RECENT_LEN`] events (the recent-completions log), counts for the last one; the events
/// before are brief ([`DoneEvent::brief`]). A busy frame is about half the size. Framed for
/// the socket ([`crate::websocket::text`]).
pub fn events_frame(events: &[DoneEvent]) -> Bytes {
    crate::websocket::text(&message(events, None))
}

/// The text of [`events_frame`], with the tracker statistics when given:
/// `{"type":"events","events":[...],"tracker":{...}}`.
fn message(events: &[DoneEvent], tracker: Option<&TrackerStats>) -> String {
    #[derive(Serialize)]
    #[serde(tag = "type", rename = "events")]
    struct EventsRef<'a> {
        events: &'a [DoneEvent],
        #[serde(skip_serializing_if = "Option::is_none")]
        tracker: Option<&'a TrackerStats>,
    }
    let full_from = events.len().saturating_sub(RECENT_LEN);
    let last = events.len().saturating_sub(1);
    let sent: Vec<DoneEvent> = events
        .iter()
        .enumerate()
        .map(|(i, e)| match i {
            i if i == last => e.clone(),
            i if i >= full_from => e.without_counts(),
            _ => e.brief(),
        })
        .collect();
    serde_json::to_string(&EventsRef {
        events: &sent,
        tracker,
    })
    .unwrap_or_default()
}

/// One completion as the old broadcaster published it (PROTOCOL.md, "Live event"):
///
/// ```text
/// {"downloader","user_agent","item","items":[...],"move_items":[...],"bytes","megabytes",
///  "domain_bytes":{...},"version","is_duplicate","counts":{"todo","out","done"}}
/// ```
///
/// `item` is the reported items joined by NUL, as the done call carries them (the one item for a
/// single-item done). Events only exist for completions that counted something, so
/// `is_duplicate` is always false, and `move_items` (the items moved to done, which the
/// production dashboard compares with `items` to show duplicates) are the items. `bytes` is the
/// report's total: the production dashboard drops a message without it.
#[derive(Serialize)]
pub struct LegacyEvent<'a> {
    downloader: &'a str,
    user_agent: &'a str,
    item: String,
    items: &'a [String],
    move_items: &'a [String],
    bytes: u64,
    megabytes: f64,
    domain_bytes: &'a BTreeMap<String, u64>,
    version: &'a str,
    is_duplicate: bool,
    counts: LegacyCounts,
}

#[derive(Serialize)]
struct LegacyCounts {
    todo: u64,
    out: u64,
    done: u64,
}

impl<'a> From<&'a DoneEvent> for LegacyEvent<'a> {
    fn from(e: &'a DoneEvent) -> Self {
        Self {
            downloader: &e.downloader,
            user_agent: &e.user_agent,
            item: e.items.join("\0"),
            items: &e.items,
            move_items: &e.items,
            bytes: e.bytes,
            megabytes: e.bytes as f64 / (1024.0 * 1024.0),
            domain_bytes: &e.domain_bytes,
            version: &e.version,
            is_duplicate: false,
            counts: LegacyCounts {
                todo: e.counts.todo,
                out: e.counts.out,
                done: e.counts.done,
            },
        }
    }
}

/// Server-sent events for `events`, one per completion, each with its sequence number as the
/// event id (a reconnecting `EventSource` sends it back as `Last-Event-ID`):
///
/// ```text
/// id: 42
/// data: {...LegacyEvent...}
///
/// ```
pub fn sse_chunk(events: &[DoneEvent]) -> String {
    let mut out = String::with_capacity(events.len() * 400);
    for e in events {
        let json = serde_json::to_string(&LegacyEvent::from(e)).unwrap_or_default();
        let _ = write!(out, "id: {}\ndata: {json}\n\n", e.seq);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::model::{ChartData, Counts, Leaderboard, LiveMessage};

    fn ev(seq: u64) -> DoneEvent {
        DoneEvent {
            seq,
            time: 1,
            downloader: "bob".into(),
            items: vec!["a".into(), "b".into()],
            bytes: 3 * 1024 * 1024,
            domain_bytes: [("data".to_string(), 3 * 1024 * 1024)].into(),
            version: "v1".into(),
            user_agent: "ua".into(),
            counts: Counts {
                todo: 1,
                out: 2,
                done: 3,
                failed: 4,
            },
            dl_items: 9,
            dl_bytes: 9,
            n: 0,
        }
    }

    fn events_of(f: &Frame) -> Vec<DoneEvent> {
        match serde_json::from_str(f.json()).unwrap() {
            LiveMessage::Events { events, .. } => events,
            other => panic!("not events: {other:?}"),
        }
    }

    #[test]
    fn the_websocket_form_parses_as_a_live_message() {
        let f = Frame::new(vec![ev(5), ev(6), ev(7)], None);
        let events = events_of(&f);
        assert_eq!(events[2], f.events()[2], "the last event goes out whole");
        assert_eq!(events[0].items, ["a", "b"], "within the log's length");
        assert_eq!(
            events[0].counts,
            Counts::default(),
            "counts on the last only"
        );
        assert_eq!((f.first(), f.last()), (5, 7));
        assert_eq!(f.after(5).unwrap()[0].seq, 6);
        assert!(f.after(7).is_none());
    }

    #[test]
    fn a_busy_frame_is_brief_yet_builds_the_same_board() {
        let full: Vec<DoneEvent> = (1..=60)
            .map(|seq| DoneEvent {
                downloader: format!("d{}", seq % 7),
                items: (0..10).map(|i| format!("item-{seq}-{i}")).collect(),
                dl_items: 10 * seq,
                counts: Counts {
                    todo: 1000 - seq,
                    out: 5,
                    done: 10 * seq,
                    failed: 0,
                },
                ..ev(seq)
            })
            .collect();
        let f = Frame::new(full.clone(), None);
        let sent = events_of(&f);
        let brief = sent.len() - RECENT_LEN;
        assert!(sent[..brief]
            .iter()
            .all(|e| e.items.is_empty() && e.n == 10 && e.user_agent.is_empty()));
        assert!(
            (brief..59).all(|i| sent[i] == full[i].without_counts()),
            "the log's events whole but for counts"
        );
        assert_eq!(sent[59], full[59]);
        let whole_size = serde_json::to_string(&LiveMessage::Events {
            events: full.clone(),
            tracker: None,
        })
        .unwrap()
        .len();
        assert!(
            f.json().len() * 10 < whole_size * 6,
            "{} bytes against {whole_size}",
            f.json().len()
        );
        let (mut from_brief, mut from_full) = (Leaderboard::default(), Leaderboard::default());
        let mut charts = (ChartData::default(), ChartData::default());
        for (b, w) in sent.iter().zip(&full) {
            assert!(from_brief.apply(b) && from_full.apply(w));
            charts.0.apply(b);
            charts.1.apply(w);
        }
        assert_eq!(from_brief.counts, full[59].counts);
        // The log shows no counts; all else is the same.
        for b in [&mut from_brief, &mut from_full] {
            b.recent
                .iter_mut()
                .for_each(|e| e.counts = Counts::default());
        }
        assert_eq!(from_brief, from_full);
        assert_eq!(charts.0, charts.1);
    }

    #[test]
    fn the_legacy_form_has_the_old_fields_and_the_production_dashboards() {
        let chunk = sse_chunk(&[ev(9)]);
        let data = chunk
            .strip_prefix("id: 9\ndata: ")
            .and_then(|s| s.strip_suffix("\n\n"))
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"downloader": "bob", "user_agent": "ua", "item": "a\u{0}b",
                "items": ["a", "b"], "move_items": ["a", "b"], "bytes": 3145728,
                "megabytes": 3.0, "domain_bytes": {"data": 3145728},
                "version": "v1", "is_duplicate": false,
                "counts": {"todo": 1, "out": 2, "done": 3}})
        );
    }
}
