//! The clients' own acceptance checks of the tracker's answers, as their sources write them.

use tests::{Reply, TestApp};

// seesaw-kit today, as the Warrior VM and the grab images install it: ArchiveTeam/grab-base-df
// `requirements.txt` at 3889737774a66966f7ad7a035a39d35f0ed6bea4 pins seesaw-kit at
// 700fadd7d331ec6cbc9266d40ddca8c3fe9701bf; its tests (the calls it makes) are
// `tests/tracker_test.py` and `tests/warrior_test.py` at 4729e84c90d8812ff7c474d137fd625a242bcfb6.

/// The user agent seesaw sends (`seesaw/tracker.py` `TrackerRequest.send_request`): "ArchiveTeam
/// Warrior/VERSION RUNNER BUILD", stripped.
pub fn seesaw_agent(version: &str) -> String {
    format!("ArchiveTeam Warrior/{version} Warrior")
}

/// POSTs `body` to `path` as seesaw `version` does: its user agent, `Content-Type:
/// application/json`.
pub async fn seesaw_post(app: &TestApp, version: &str, path: &str, body: String) -> Reply {
    let agent = seesaw_agent(version);
    app.post_with(
        path,
        &[("user-agent", &agent), ("content-type", "application/json")],
        body,
    )
    .await
}

/// `GetItemFromTracker.process_body`: a 200 whose body is a JSON object with `item_name`; the
/// object (every key is copied into the item). `None`: seesaw retries ("empty response") or,
/// for a body that is not JSON, fails the item.
pub fn accepted_claim(r: &Reply) -> Option<serde_json::Map<String, serde_json::Value>> {
    if r.status != 200 {
        return None;
    }
    match serde_json::from_str::<serde_json::Value>(&r.body).ok()? {
        serde_json::Value::Object(m) if m.contains_key("item_name") => Some(m),
        _ => None,
    }
}

/// What today's seesaw hands a grab script's `item_filter`: `[{"item", "queue"}, ...]` from the
/// claim's parallel lists `items` and `queues` (`test_an_item_filter_sees_the_items_and_queues`).
pub fn filter_input(claim: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, String)> {
    let items = claim["items"].as_array().expect("items, a list");
    let queues = claim["queues"].as_array().expect("queues, a list");
    assert_eq!(items.len(), queues.len(), "parallel lists");
    items
        .iter()
        .zip(queues)
        .map(|(i, q)| {
            (
                i.as_str().expect("an item name").to_string(),
                q.as_str().expect("a queue name").to_string(),
            )
        })
        .collect()
}

/// `ReleaseItemsToTracker`: a 200 whose body is exactly `{"items": [...]}` (another key, a
/// non-list, or text is "invalid release response", retried forever); the names.
pub fn accepted_release(r: &Reply) -> Option<Vec<String>> {
    if r.status != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&r.body).ok()?;
    let m = v.as_object()?;
    if m.len() != 1 {
        return None;
    }
    m.get("items")?
        .as_array()?
        .iter()
        .map(|i| i.as_str().map(String::from))
        .collect()
}

/// `SendDoneToTracker.process_body`: a 200 whose body stripped is `OK`.
pub fn accepted_done(r: &Reply) -> bool {
    r.status == 200 && r.body.trim() == "OK"
}
