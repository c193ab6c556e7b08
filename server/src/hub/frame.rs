//! Frames: a batch of consecutive completion events of one project, serialised once for the
//! websocket and (on first use) once for the server-sent-events feed, then shared by every watcher.

use app::model::DoneEvent;
use axum::{body::Bytes, extract::ws::Utf8Bytes};
use serde::Serialize;
use std::{collections::BTreeMap, fmt::Write, sync::OnceLock};

/// Consecutive events of one project, with their serialised forms.
pub struct Frame {
    events: Vec<DoneEvent>,
    ws: Utf8Bytes,
    sse: OnceLock<Bytes>,
}

impl Frame {
    /// A frame of `events` (non-empty, sorted by `seq`, no repeats).
    pub(super) fn new(events: Vec<DoneEvent>) -> Self {
        let ws = events_message(&events).into();
        Self {
            events,
            ws,
            sse: OnceLock::new(),
        }
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

    /// The websocket message: `{"type":"events","events":[...]}`.
    pub fn ws(&self) -> Utf8Bytes {
        self.ws.clone()
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

/// The websocket form of some events, as [`app::model::LiveMessage::Events`] serialises it,
/// without copying them into one.
pub fn events_message(events: &[DoneEvent]) -> String {
    #[derive(Serialize)]
    #[serde(tag = "type", rename = "events")]
    struct EventsRef<'a> {
        events: &'a [DoneEvent],
    }
    serde_json::to_string(&EventsRef { events }).unwrap_or_default()
}

/// One completion as the old broadcaster published it (PROTOCOL.md, "Live event"):
///
/// ```text
/// {"downloader","user_agent","item","items":[...],"megabytes","domain_bytes":{...},"version",
///  "is_duplicate","counts":{"todo","out","done"}}
/// ```
///
/// `item` is the reported items joined by NUL, as the done call carries them (the one item for a
/// single-item done). Events only exist for completions that counted something, so
/// `is_duplicate` is always false.
#[derive(Serialize)]
pub struct LegacyEvent<'a> {
    downloader: &'a str,
    user_agent: &'a str,
    item: String,
    items: &'a [String],
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
    use app::model::{Counts, LiveMessage};

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
        }
    }

    #[test]
    fn the_websocket_form_parses_as_a_live_message() {
        let f = Frame::new(vec![ev(5), ev(6), ev(7)]);
        let msg: LiveMessage = serde_json::from_str(f.ws().as_str()).unwrap();
        let LiveMessage::Events { events } = msg else {
            panic!("not events")
        };
        assert_eq!(events, f.events());
        assert_eq!((f.first(), f.last()), (5, 7));
        assert_eq!(f.after(5).unwrap()[0].seq, 6);
        assert!(f.after(7).is_none());
    }

    #[test]
    fn the_legacy_form_has_exactly_the_old_fields() {
        let chunk = sse_chunk(&[ev(9)]);
        let data = chunk
            .strip_prefix("id: 9\ndata: ")
            .and_then(|s| s.strip_suffix("\n\n"))
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"downloader": "bob", "user_agent": "ua", "item": "a\u{0}b",
                "items": ["a", "b"], "megabytes": 3.0, "domain_bytes": {"data": 3145728},
                "version": "v1", "is_duplicate": false,
                "counts": {"todo": 1, "out": 2, "done": 3}})
        );
    }
}
