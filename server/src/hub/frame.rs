//! Frames: a batch of consecutive completion events of one project, serialised once for the
//! websocket and (on first use) once for the server-sent-events feed, then shared by every watcher.

use app::model::{DoneEvent, TrackerStats, RECENT_LEN};
use axum::body::Bytes;
use serde::Serialize;
use std::{
    collections::BTreeMap,
    fmt::Write,
    sync::{Arc, OnceLock},
};

/// Consecutive events of one project, with their serialised forms.
pub struct Frame {
    events: Vec<DoneEvent>,
    /// The project's tracker statistics last read, for the compatibility feed.
    legacy: Option<Arc<TrackerStats>>,
    /// The websocket message, framed ([`crate::websocket::text`]).
    ws: Bytes,
    sse: OnceLock<Bytes>,
}

impl Frame {
    /// A frame of `events` (sorted by `seq`, no repeats), with `latest`, the project's tracker
    /// statistics last read: the compatibility feed's rates and queue sizes, and in the
    /// websocket message when `fresh` (read again since the last frame). A frame without
    /// events carries only the statistics (see [`Frame::is_figures_only`]).
    pub(super) fn new(
        events: Vec<DoneEvent>,
        fresh: bool,
        latest: Option<Arc<TrackerStats>>,
    ) -> Self {
        let tracker = latest.as_deref().filter(|_| fresh);
        let ws = crate::websocket::text(&message(&events, tracker));
        Self {
            events,
            legacy: latest,
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
            .get_or_init(|| sse_chunk(&self.events, self.legacy.as_deref()).into())
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

/// One completion as the old broadcaster published it (PROTOCOL.md, "Live event"), with the
/// fields the production tracker added:
///
/// ```text
/// {"downloader","user_agent","item","items":[...],"move_items":[...],"bytes","megabytes",
///  "domain_bytes":{...},"version","is_duplicate",
///  "counts":{"todo","out","done","rcr","rcsr","irsr","ifir","ifar"},
///  "stats":{"queues":{queue: n},"values":{name: x}},"queuestats":{queue: n}}
/// ```
///
/// `item` is the reported items joined by NUL, as the done call carries them (the one item for a
/// single-item done). Events only exist for completions that counted something, so
/// `is_duplicate` is always false, and `move_items` (the items moved to done, which the
/// production dashboard compares with `items` to show duplicates) are the items. `bytes` is the
/// report's total: the production dashboard drops a message without it. The rates, `stats`
/// and `queuestats` come from the project's tracker statistics last read for its watchers
/// (every few seconds while it is busy; see [`TrackerStats::queues`] for the queue names):
/// zeros and empty objects before the first read, so a dashboard that reads them finds them.
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
    stats: LegacyStats<'a>,
    queuestats: &'a BTreeMap<String, u64>,
}

#[derive(Serialize)]
struct LegacyCounts {
    todo: u64,
    out: u64,
    done: u64,
    #[serde(flatten)]
    rates: LegacyRates,
}

/// The production tracker's `stats`: queue sizes and named figures.
#[derive(Serialize)]
struct LegacyStats<'a> {
    queues: &'a BTreeMap<String, u64>,
    values: BTreeMap<&'static str, f64>,
}

/// The empty queue sizes of a project whose statistics were not read yet.
static NO_QUEUES: BTreeMap<String, u64> = BTreeMap::new();

impl<'a> LegacyEvent<'a> {
    /// The old form of `e`, with the rates and queue sizes of `figures` when known.
    pub fn new(e: &'a DoneEvent, figures: Option<&'a TrackerStats>) -> Self {
        let rates = figures.map(LegacyRates::from).unwrap_or_default();
        let queues = figures.map_or(&NO_QUEUES, |f| &f.queues);
        let values = [
            ("reclaim_rate", rates.rcr),
            ("reclaim_serve_rate", rates.rcsr),
            ("item_request_serve_rate", rates.irsr),
            ("item_filter_rate", rates.ifir),
            ("item_fail_rate", rates.ifar),
            ("done_counter", e.counts.done as f64),
        ]
        .into_iter()
        .collect();
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
                rates,
            },
            stats: LegacyStats { queues, values },
            queuestats: queues,
        }
    }
}

/// The production tracker's rate fields (`counts.rcr` ...) as fractions of 1, 0 when nothing
/// was counted (its dashboard shows them as percentages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LegacyRates {
    /// Reclaims per item handed out (`reclaim_rate`).
    pub rcr: f64,
    /// Reclaimed items per item served (`reclaim_serve_rate`).
    pub rcsr: f64,
    /// Claims served per claim (`item_request_serve_rate`).
    pub irsr: f64,
    /// Backfed records filtered as known per record backfed (`item_filter_rate`).
    pub ifir: f64,
    /// Items failed per item finished (`item_fail_rate`).
    pub ifar: f64,
}

impl From<&TrackerStats> for LegacyRates {
    fn from(t: &TrackerStats) -> Self {
        let r = |x: Option<f64>| x.unwrap_or(0.0);
        Self {
            rcr: r(t.reclaim_rate),
            rcsr: r(t.reclaim_serve_rate),
            irsr: r(t.item_request_serve_rate),
            ifir: r(t.item_filter_rate),
            ifar: r(t.item_fail_rate),
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
pub fn sse_chunk(events: &[DoneEvent], figures: Option<&TrackerStats>) -> String {
    let mut out = String::with_capacity(events.len() * 700);
    for e in events {
        let json = serde_json::to_string(&LegacyEvent::new(e, figures)).unwrap_or_default();
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
        let f = Frame::new(vec![ev(5), ev(6), ev(7)], false, None);
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
        let f = Frame::new(full.clone(), false, None);
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
        let data = |chunk: String| -> serde_json::Value {
            let data = chunk
                .strip_prefix("id: 9\ndata: ")
                .and_then(|s| s.strip_suffix("\n\n"))
                .unwrap()
                .to_string();
            serde_json::from_str(&data).unwrap()
        };
        let zero = serde_json::json!({"reclaim_rate": 0.0, "reclaim_serve_rate": 0.0,
            "item_request_serve_rate": 0.0, "item_filter_rate": 0.0, "item_fail_rate": 0.0,
            "done_counter": 3.0});
        assert_eq!(
            data(sse_chunk(&[ev(9)], None)),
            serde_json::json!({"downloader": "bob", "user_agent": "ua", "item": "a\u{0}b",
                "items": ["a", "b"], "move_items": ["a", "b"], "bytes": 3145728,
                "megabytes": 3.0, "domain_bytes": {"data": 3145728},
                "version": "v1", "is_duplicate": false,
                "counts": {"todo": 1, "out": 2, "done": 3, "rcr": 0.0, "rcsr": 0.0,
                    "irsr": 0.0, "ifir": 0.0, "ifar": 0.0},
                "stats": {"queues": {}, "values": zero}, "queuestats": {}})
        );
        // With the statistics last read: the rates as fractions, the queues by the old names.
        let figures = TrackerStats {
            reclaim_rate: Some(0.25),
            item_request_serve_rate: Some(0.5),
            item_fail_rate: Some(0.125),
            queues: [("todo".to_string(), 7), ("claims".to_string(), 2)].into(),
            ..Default::default()
        };
        let v = data(sse_chunk(&[ev(9)], Some(&figures)));
        assert_eq!(v["counts"]["rcr"], 0.25);
        assert_eq!(v["counts"]["irsr"], 0.5);
        assert_eq!(v["counts"]["ifar"], 0.125);
        assert_eq!(v["counts"]["rcsr"], 0.0, "none counted: 0");
        assert_eq!(v["stats"]["values"]["item_request_serve_rate"], 0.5);
        assert_eq!(
            v["stats"]["queues"],
            serde_json::json!({"todo": 7, "claims": 2})
        );
        assert_eq!(v["queuestats"], v["stats"]["queues"]);
        // A frame keeps the statistics last read for its compatibility chunk.
        let f = Frame::new(vec![ev(9)], false, Some(Arc::new(figures)));
        assert_eq!(
            data(String::from_utf8(f.sse().to_vec()).unwrap())["counts"]["rcr"],
            0.25
        );
    }
}
