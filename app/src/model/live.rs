//! The leaderboard websocket's messages (`GET /SLUG/ws`).

use super::{DoneEvent, Leaderboard, TrackerStats};
use serde::{Deserialize, Serialize};

/// A message on the leaderboard websocket (`GET /SLUG/ws`).
///
/// ```text
/// {"type":"snapshot","board":{...Leaderboard...}}
/// {"type":"events","events":[{...DoneEvent...}, ...]}
/// {"type":"events","events":[...],"tracker":{...TrackerStats...}}   now and then (events may be [])
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", try_from = "LiveWire")]
// A message lives only from parsing to applying; boxing the board would change the shared
// type every sender builds, for no measurable gain.
#[allow(clippy::large_enum_variant)]
pub enum LiveMessage {
    /// The whole state; replaces what the viewer had.
    Snapshot {
        /// The state.
        board: Leaderboard,
    },
    /// Events after the viewer's last sequence number.
    Events {
        /// The events, oldest first.
        events: Vec<DoneEvent>,
        /// The tracker statistics of the last hour, read again (every few seconds while items
        /// complete, and once after); absent when unchanged. Per-minute figures do not follow
        /// from the events, so the server reads them once per project for every viewer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tracker: Option<TrackerStats>,
    },
}

/// A [`LiveMessage`] as read: one struct with every variant's fields. serde reads an internally
/// tagged enum by buffering the whole message and reading it again (its `Content` type, some
/// 20 KB of the Wasm with a second copy of the board's reader); a struct is read in one pass.
#[derive(Deserialize)]
struct LiveWire {
    #[serde(rename = "type")]
    kind: String,
    board: Option<Leaderboard>,
    events: Option<Vec<DoneEvent>>,
    tracker: Option<TrackerStats>,
}

impl TryFrom<LiveWire> for LiveMessage {
    type Error = String;

    fn try_from(wire: LiveWire) -> Result<Self, String> {
        match (wire.kind.as_str(), wire.board, wire.events) {
            ("snapshot", Some(board), _) => Ok(Self::Snapshot { board }),
            ("events", _, Some(events)) => Ok(Self::Events {
                events,
                tracker: wire.tracker,
            }),
            (kind, ..) => Err(format!("a live message of type {kind:?} without its field")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Counts;

    #[test]
    fn live_messages_read_back_as_sent() {
        let board = Leaderboard {
            slug: "p".into(),
            seq: 7,
            ..Default::default()
        };
        let snapshot = serde_json::to_string(&LiveMessage::Snapshot {
            board: board.clone(),
        })
        .unwrap();
        assert!(snapshot.starts_with(r#"{"type":"snapshot","board":{"#));
        match serde_json::from_str(&snapshot).unwrap() {
            LiveMessage::Snapshot { board: got } => assert_eq!(got, board),
            other => panic!("read {other:?}"),
        }
        let events = vec![DoneEvent {
            seq: 8,
            time: 1,
            downloader: "a".into(),
            items: vec!["i1".into(), "i2".into()],
            bytes: 10,
            domain_bytes: [("data".to_string(), 10)].into(),
            version: String::new(),
            user_agent: String::new(),
            counts: Counts::default(),
            dl_items: 0,
            dl_bytes: 0,
            n: 0,
        }];
        let text = serde_json::to_string(&LiveMessage::Events {
            events: events.clone(),
            tracker: None,
        })
        .unwrap();
        assert!(!text.contains("tracker"), "{text}");
        match serde_json::from_str(&text).unwrap() {
            LiveMessage::Events {
                events: got,
                tracker: None,
            } => assert_eq!(got, events),
            other => panic!("read {other:?}"),
        }
        let tracker = TrackerStats {
            window_minutes: 60,
            unique_downloaders_30d: 3,
            ..Default::default()
        };
        let text = serde_json::to_string(&LiveMessage::Events {
            events: vec![],
            tracker: Some(tracker.clone()),
        })
        .unwrap();
        match serde_json::from_str(&text).unwrap() {
            LiveMessage::Events {
                events,
                tracker: Some(got),
            } => assert!(events.is_empty() && got == tracker),
            other => panic!("read {other:?}"),
        }
        for bad in [r#"{"type":"snapshot"}"#, r#"{"type":"nope","events":[]}"#] {
            assert!(serde_json::from_str::<LiveMessage>(bad).is_err(), "{bad}");
        }
    }
}
