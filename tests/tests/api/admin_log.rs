//! `/admin/api/SLUG/log`, `/log/archive`, `/archives`: the completion log downloaded by time range,
//! and archived to gzip files.

use server::store::{now_ms, Role};
use std::io::Read;
use tests::panel::{account, json, last_audit, Panel};
use tests::TestApp;

#[tokio::test]
async fn the_completion_log_downloads_as_ndjson_for_a_time_range() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c"]).await;
    account(&app, "root", Role::ReadOnly, &[]).await;
    for _ in 0..3 {
        let item = app.claim("p1", "alice").await;
        assert_eq!(app.done("p1", "alice", &item, 10).await.status, 200);
    }
    let mut p = Panel::logged_in(&app, "root").await;
    let r = p.get("/admin/api/p1/log").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.headers["content-type"], "application/x-ndjson");
    let lines: Vec<serde_json::Value> = r
        .body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["d"], "alice");
    assert_eq!(lines[0]["items"].as_array().unwrap().len(), 1);
    let later = p
        .get(&format!("/admin/api/p1/log?from={}", now_ms() + 60_000))
        .await;
    assert_eq!(later.body, "", "nothing after now");
    // Ranges are by the log's own clock: the millisecond part of `log_id`.
    let ms = |v: &serde_json::Value| -> u64 {
        v["log_id"]
            .as_str()
            .unwrap()
            .split('-')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (t0, t2) = (ms(&lines[0]), ms(&lines[2]));
    let first = p.get(&format!("/admin/api/p1/log?from=0&to={t0}")).await;
    let expect = lines.iter().filter(|l| ms(l) <= t0).count();
    assert_eq!(first.body.lines().count(), expect);
    let last = p.get(&format!("/admin/api/p1/log?from={t2}")).await;
    assert_eq!(
        last.body.lines().count(),
        lines.iter().filter(|l| ms(l) >= t2).count()
    );
    assert_eq!(p.get("/admin/api/nope/log").await.status, 404);
}

#[tokio::test]
async fn archiving_writes_the_oldest_log_entries_to_gzip_and_trims_them() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c", "d"]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "ro", Role::ReadOnly, &[]).await;
    account(&app, "other", Role::Project, &["p2"]).await;
    for _ in 0..3 {
        let item = app.claim("p1", "alice").await;
        assert_eq!(app.done("p1", "alice", &item, 10).await.status, 200);
    }
    let mut p = Panel::logged_in(&app, "root").await;
    let log = p.get("/admin/api/p1/log").await.body;
    let ids: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["log_id"].to_string())
        .collect();
    assert_eq!(ids.len(), 3);
    let ms = |id: &str| -> u64 {
        id.trim_matches('"')
            .split('-')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let cut = ms(&ids[1]);
    let expected = ids.iter().filter(|i| ms(i) <= cut).count();

    for who in ["ro", "other"] {
        let mut q = Panel::logged_in(&app, who).await;
        let r = q
            .post("/admin/api/p1/log/archive", serde_json::json!({"to": cut}))
            .await;
        assert_eq!(r.status, 403, "{who}: {}", r.body);
    }
    let r = p
        .post(
            "/admin/api/p1/log/archive",
            serde_json::json!({"to": "soon"}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.body);
    let dry = json(
        &p.post(
            "/admin/api/p1/log/archive",
            serde_json::json!({"to": cut, "dry_run": true}),
        )
        .await,
    );
    assert_eq!(dry["count"], expected);
    assert_eq!(p.get("/admin/api/p1/log").await.body.lines().count(), 3);

    let done = json(
        &p.post("/admin/api/p1/log/archive", serde_json::json!({"to": cut}))
            .await,
    );
    assert_eq!(done["count"], expected);
    let file = done["file"].as_str().unwrap().to_string();
    assert!(
        file.starts_with("p1-") && file.ends_with(".ndjson.gz"),
        "{file}"
    );
    let left: u64 = {
        use fred::prelude::*;
        app.store
            .client()
            .xlen(app.store.keys().project("p1").log())
            .await
            .unwrap()
    };
    assert_eq!(left as usize, 3 - expected, "trimmed from Redis");
    // The download reads the archive, then Redis: still every entry, in order.
    let whole = p.get("/admin/api/p1/log").await.body;
    let again: Vec<String> = whole
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["log_id"].to_string())
        .collect();
    assert_eq!(again, ids, "the archived entries, then those in Redis");

    let listed = json(&p.get("/admin/api/p1/archives").await);
    assert_eq!(listed[0]["name"], file.as_str());
    let r = app
        .send(
            app.http
                .get(app.url(&format!("/admin/api/p1/archives/{file}")))
                .header("cookie", &p.cookie),
        )
        .await;
    assert_eq!(r.status, 200);
    let raw = app
        .http
        .get(app.url(&format!("/admin/api/p1/archives/{file}")))
        .header("cookie", &p.cookie)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_string(&mut text)
        .unwrap();
    let archived: Vec<&str> = text.lines().collect();
    assert_eq!(archived.len(), expected);
    assert_eq!(
        archived.join("\n"),
        log.lines().take(expected).collect::<Vec<_>>().join("\n")
    );
    // The command line reads it where it is (a file, or an object when the segments are).
    let listed = app.cli(&["archives", "p1"], b"");
    assert!(listed.ok, "{} {}", listed.out, listed.err);
    assert_eq!(listed.out, format!("{file}\t{}\n", raw.len()));
    let got = app.cli(&["archives", "p1", &file], b"");
    assert!(got.ok, "{}", got.err);
    assert_eq!(
        got.stdout,
        raw.to_vec(),
        "the same bytes as the panel's download"
    );
    let none = app.cli(&["archives", "p1", "p1-1-2.ndjson.gz"], b"");
    assert!(
        !none.ok && none.err.contains("has no archive"),
        "{}",
        none.err
    );
    let bad = app.cli(&["archives", "p1", "../../etc/passwd"], b"");
    assert!(
        !bad.ok && bad.err.contains("not an archive's name"),
        "{}",
        bad.err
    );
    let unknown = app.cli(&["archives", "nope"], b"");
    assert!(
        !unknown.ok && unknown.err.contains("no such project"),
        "{}",
        unknown.err
    );
    assert_eq!(
        p.get("/admin/api/p1/archives/..%2F..%2Fetc%2Fpasswd")
            .await
            .status,
        404
    );
    let audit = last_audit(&mut p, "log.archive").await;
    assert_eq!(audit["count"], expected);
    assert_eq!(audit["detail"], file.as_str());

    // Nothing left before the cut: no file.
    let again = json(
        &p.post("/admin/api/p1/log/archive", serde_json::json!({"to": cut}))
            .await,
    );
    assert_eq!(again["count"], 0);
    assert!(again["file"].is_null());
}
