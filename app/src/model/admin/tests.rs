//! Every admin reply survives the trip server → JSON → panel unchanged, in the wire shape the
//! API documents (and the integration tests read).

use super::*;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Value};
use std::fmt::Debug;

/// Serialises `built` as the server does, checks the JSON is `wire`, and reads it back as the
/// panel does.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(built: T, wire: Value) {
    let text = serde_json::to_string(&built).expect("serialises");
    let sent: Value = serde_json::from_str(&text).expect("is JSON");
    assert_eq!(sent, wire, "wire shape");
    let read: T = serde_json::from_str(&text).expect("the panel reads it");
    assert_eq!(read, built);
}

#[test]
fn session() {
    let s = AdminSession {
        user: Some("ann".into()),
        role: Some(Role::Project),
        projects: vec!["p1".into()],
        csrf: "tok".into(),
        setup_pending: false,
    };
    assert!(s.logged_in() && s.is_actor() && !s.is_global());
    assert!(s.may_change("p1") && !s.may_change("p2"));
    round_trip(
        s,
        json!({"user": "ann", "role": "project", "projects": ["p1"], "csrf": "tok", "setup_pending": false}),
    );
    let visitor = AdminSession::default();
    assert!(!visitor.logged_in() && !visitor.may_change("p1") && visitor.role_label().is_empty());
    round_trip(
        visitor,
        json!({"user": null, "role": null, "projects": [], "csrf": "", "setup_pending": false}),
    );
}

#[test]
fn roles() {
    for role in [Role::Global, Role::Project, Role::ReadOnly] {
        assert_eq!(Role::parse(role.as_str()), Some(role));
        assert_eq!(Role::parse(role.label()), Some(role));
        round_trip(role, json!(role.as_str()));
    }
    assert_eq!(Role::ReadOnly.label(), "read-only");
    let global = AdminSession {
        role: Some(Role::Global),
        ..AdminSession::default()
    };
    assert!(global.may_change("any") && global.is_global());
    let read_only = AdminSession {
        role: Some(Role::ReadOnly),
        projects: vec!["p1".into()],
        ..AdminSession::default()
    };
    assert!(!read_only.may_change("p1") && !read_only.is_actor());
}

#[test]
fn counts_and_overview() {
    round_trip(
        Affected {
            count: 3,
            dry_run: true,
        },
        json!({"count": 3, "dry_run": true}),
    );
    let row = ProjectRow {
        slug: "p".into(),
        title: "P".into(),
        state: "active".into(),
        priority: -1,
        queues: [("todo".to_string(), 2), ("todo:redo".to_string(), 3)].into(),
        claimed: 4,
        done: 5,
        failed: 6,
        items_per_minute: 1.5,
    };
    assert_eq!(row.waiting(), 5);
    round_trip(
        Overview {
            projects: vec![row],
            redis_memory: "1M".into(),
            version: "0.1.0".into(),
        },
        json!({"projects": [{"slug": "p", "title": "P", "state": "active", "priority": -1,
            "queues": {"todo": 2, "todo:redo": 3}, "claimed": 4, "done": 5, "failed": 6,
            "items_per_minute": 1.5}], "redis_memory": "1M", "version": "0.1.0"}),
    );
    round_trip(
        Queues {
            queues: [("todo".to_string(), 1)].into(),
            claimed: 2,
            done: 3,
            failed: 0,
        },
        json!({"queues": {"todo": 1}, "claimed": 2, "done": 3, "failed": 0}),
    );
}

#[test]
fn accounts_audit_tokens() {
    round_trip(
        vec![AccountInfo {
            name: "ann".into(),
            role: Role::ReadOnly,
            projects: vec![],
            t: 7,
        }],
        json!([{"name": "ann", "role": "read_only", "projects": [], "t": 7}]),
    );
    round_trip(
        AuditEntry {
            t: 1,
            who: "cli".into(),
            action: "items.add".into(),
            project: "p".into(),
            count: 2,
            detail: "todo".into(),
        },
        json!({"t": 1, "who": "cli", "action": "items.add", "project": "p", "count": 2, "detail": "todo"}),
    );
    let token = ApiToken {
        id: "abc".into(),
        name: "script".into(),
        t: 9,
        expires: 10,
    };
    round_trip(
        vec![token.clone()],
        json!([{"id": "abc", "name": "script", "t": 9, "expires": 10}]),
    );
    round_trip(
        CreatedToken {
            token,
            secret: "s3cret".into(),
        },
        json!({"id": "abc", "name": "script", "t": 9, "expires": 10, "secret": "s3cret"}),
    );
}

#[test]
fn blocks() {
    let entry = BlockEntry {
        reason: "spam".into(),
        by: "auto".into(),
        t: 10,
        expires: 20,
    };
    assert!(entry.is_automatic() && entry.active(19) && !entry.active(20));
    round_trip(
        vec![BlockRow {
            kind: "ip".into(),
            value: "192.0.2.1".into(),
            entry,
            active: true,
        }],
        json!([{"kind": "ip", "value": "192.0.2.1", "reason": "spam", "by": "auto", "t": 10,
            "expires": 20, "active": true}]),
    );
    // Stored entries from before a field existed still read.
    let old: BlockEntry = serde_json::from_str(r#"{"reason":"x"}"#).expect("reads");
    assert!(old.active(u64::MAX));
}

#[test]
fn project_settings() {
    let settings = Settings {
        title: "P".into(),
        state: "paused".into(),
        domains: vec!["data".into()],
        extra: [("k".to_string(), "v".to_string())].into(),
        pattern_limits: vec![PatternLimit {
            name: "big".into(),
            pattern: "^b".into(),
            rate: 0.5,
            burst: 2.0,
        }],
        ..Settings::default()
    };
    let shown = ProjectSettings {
        settings,
        description: "<b>hi</b>".into(),
        priority: Some(2),
        targets: vec![("rsync://h/m/".into(), true)],
        admins: Some(vec!["ann".into()]),
        secrets_hidden: true,
        backfeed_keys: vec![],
    };
    let text = serde_json::to_string(&shown).expect("serialises");
    let wire: Value = serde_json::from_str(&text).expect("is JSON");
    assert_eq!(wire["settings"]["pattern_limits"][0]["burst"], json!(2.0));
    assert_eq!(wire["targets"], json!([["rsync://h/m/", true]]));
    assert_eq!(wire["settings"]["extra"], json!({"k": "v"}));
    let read: ProjectSettings = serde_json::from_str(&text).expect("reads");
    assert_eq!(read, shown);
    // A save may leave out what it does not change.
    let save: ProjectSettings =
        serde_json::from_value(json!({"settings": wire["settings"].clone()})).expect("reads");
    assert_eq!((save.priority, save.admins), (None, None));
    round_trip(
        BackfeedKey {
            backfeed_key: "k".into(),
        },
        json!({"backfeed_key": "k"}),
    );
    round_trip(Destroyed { keys: 12 }, json!({"keys": 12}));
}

#[test]
fn claims_failed_archives() {
    round_trip(
        vec![ClaimGroup {
            downloader: "d".into(),
            count: 2,
            oldest: 5,
            ips: vec!["192.0.2.1".into()],
            done: 1,
        }],
        json!([{"downloader": "d", "count": 2, "oldest": 5, "ips": ["192.0.2.1"], "done": 1}]),
    );
    round_trip(
        FailedList {
            items: vec![FailedItem {
                item: "i".into(),
                reason: "claimed too often".into(),
                t: 3,
            }],
            total: 40,
        },
        json!({"items": [{"item": "i", "reason": "claimed too often", "t": 3}], "total": 40}),
    );
    round_trip(
        vec![ArchiveFile {
            name: "p-1-2.ndjson.gz".into(),
            bytes: 30,
        }],
        json!([{"name": "p-1-2.ndjson.gz", "bytes": 30}]),
    );
    round_trip(
        Archived {
            affected: Affected {
                count: 4,
                dry_run: false,
            },
            file: Some("p-1-2.ndjson.gz".into()),
        },
        json!({"count": 4, "dry_run": false, "file": "p-1-2.ndjson.gz"}),
    );
}

#[test]
fn warrior_list() {
    round_trip(
        WarriorList {
            json: "{}".into(),
            versions: vec![WarriorVersion {
                t: 1,
                who: "ann".into(),
            }],
        },
        json!({"json": "{}", "versions": [{"t": 1, "who": "ann"}]}),
    );
    round_trip(
        SavedList {
            json: json!({"projects": []}),
            dry_run: true,
        },
        json!({"json": {"projects": []}, "dry_run": true}),
    );
    round_trip(RestoredList { json: "{}".into() }, json!({"json": "{}"}));
    let doc = json!({"broadcast_message": "<b>hi</b>", "warrior": {"seesaw_version": "0.10.3"},
        "projects": [{"name": "a", "repository": "r", "deadline": "2013-04-30T23:59:59Z"},
                     {"name": "b", "title": "B", "description": 5, "repository": "s", "lat_lng": [1, 2]}]});
    let p: WarriorPreview = serde_json::from_value(doc).expect("reads");
    assert_eq!(p.broadcast_message, "<b>hi</b>");
    assert_eq!(p.warrior.seesaw_version, "0.10.3");
    assert_eq!(p.projects[0].heading(), "a");
    assert_eq!(
        p.projects[0].deadline.as_deref(),
        Some("2013-04-30T23:59:59Z")
    );
    assert_eq!(
        (p.projects[1].heading(), p.projects[1].description.as_str()),
        ("B", "")
    );
}

#[test]
fn the_codec_has_one_field_per_setting_and_round_trips_each() {
    let json = serde_json::to_value(Settings::default()).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut names: Vec<&str> = SETTING_FIELDS.iter().map(|f| f.name).collect();
    names.sort();
    let mut keys = keys.clone();
    keys.sort();
    assert_eq!(names, keys, "one codec field per field of Settings");
    let s = Settings {
        title: "T".into(),
        banner: "b, c".into(),
        state: "paused".into(),
        domains: vec!["data".into(), "other".into()],
        rate: 2.5,
        burst: 7.0,
        claims_limit: 3,
        decay_factor: 0.8,
        decay_threshold: 0.01,
        fifo: true,
        require_token: true,
        tags: vec!["a".into()],
        extra: [("k".to_string(), "v".to_string())].into(),
        pattern_limits: vec![PatternLimit {
            name: "p".into(),
            pattern: "^x".into(),
            rate: 1.0,
            burst: 2.0,
        }],
        done_policy: "offload".into(),
        log_keep: 9_000,
        ..default_settings()
    };
    let encoded: Vec<(&str, String)> = SETTING_FIELDS
        .iter()
        .map(|f| (f.name, f.encode(&s)))
        .collect();
    let meta: BTreeMap<&str, &str> = encoded.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(decode_meta(&meta), s);
    // A field that does not decode reads as its default, as a missing one does.
    let mut broken = meta.clone();
    broken.insert("rate", "fast");
    broken.insert("fifo", "yes");
    let read = decode_meta(&broken);
    assert_eq!((read.rate, read.fifo), (0.0, false));
    // Serde's defaults (a document lacking the field) are the codec's.
    let d = default_settings();
    assert_eq!(
        (d.state.as_str(), d.done_policy.as_str()),
        ("active", "keep")
    );
    assert_eq!((d.auto_block_ttl, d.decay_threshold), (86_400, 0.005));
    let mut partial = serde_json::to_value(&s).unwrap();
    for k in ["decay_threshold", "done_policy", "log_keep", "queue_high"] {
        partial.as_object_mut().unwrap().remove(k);
    }
    let read: Settings = serde_json::from_value(partial).unwrap();
    assert_eq!(
        (
            read.decay_threshold,
            read.done_policy,
            read.log_keep,
            read.queue_high
        ),
        (d.decay_threshold, d.done_policy, d.log_keep, d.queue_high)
    );
}

#[test]
fn the_panel_reads_a_setting_as_its_text_field_shows_it() {
    let field = |name| setting_field(name).unwrap();
    let mut s = default_settings();
    field("domains")
        .set_text(&mut s, " data , other,, ")
        .unwrap();
    assert_eq!(s.domains, ["data", "other"]);
    assert_eq!(field("domains").panel_text(&s), "data, other");
    field("rate").set_text(&mut s, " 2 ").unwrap();
    assert_eq!(field("rate").panel_text(&s), "2.0");
    assert_eq!(
        field("rate").set_text(&mut s, "x"),
        Err("Rate limit (items per second; 0: none): not a number.".into())
    );
    assert_eq!(
        field("reclaim_ttl").set_text(&mut s, "-1"),
        Err("Reclaim TTL (seconds; 0: never): not a whole number.".into())
    );
}
