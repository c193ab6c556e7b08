//! The `tracker` command line against the panel: both front doors run the same operations, so
//! the CLI's changes are audited (under `cli`), and both accept and refuse the same input:
//! blocks, item files (plain, gzip, zstd; bad lines), projects and settings.

use server::store::{AuditEntry, BlockKind};
use tests::{Reply, TestApp, ADMIN_TOKEN};

/// Runs `tracker ARGS...` and panics unless it succeeds; its stdout.
fn ok(app: &TestApp, args: &[&str]) -> String {
    let run = app.cli(args, b"");
    assert!(run.ok, "{args:?}: {}", run.err);
    run.out
}

/// POSTs `body` to the admin API with the install's admin token.
async fn panel(app: &TestApp, path: &str, body: impl Into<reqwest::Body>) -> Reply {
    let req = app
        .http
        .post(app.url(path))
        .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
        .header("content-type", "application/json")
        .body(body);
    app.send(req).await
}

/// The audit log, newest first.
async fn audit(app: &TestApp) -> Vec<AuditEntry> {
    app.store.people().audit_log(1000, |_| true).await.unwrap()
}

/// A temporary file holding `bytes`, removed on drop.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> TempFile {
        let path = std::env::temp_dir().join(tests::random_name(name));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, bytes).unwrap();
    gz.finish().unwrap()
}

/// One zstd frame holding `bytes` in raw blocks, made by hand (RFC 8878: magic, a descriptor
/// with no options and a 128 KiB window, then blocks of at most 128 KiB, the last one marked).
fn zstd(bytes: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
    let chunks: Vec<&[u8]> = bytes.chunks(128 * 1024).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let last = u32::from(i + 1 == chunks.len());
        let header = last | ((chunk.len() as u32) << 3);
        frame.extend_from_slice(&header.to_le_bytes()[..3]);
        frame.extend_from_slice(chunk);
    }
    frame
}

#[tokio::test]
async fn every_cli_change_is_audited_under_cli() {
    let app = TestApp::start().await;
    ok(&app, &["project", "create", "demo", "--title", "Demo"]);
    ok(&app, &["project", "set", "demo", "rate=5", "burst=10"]);
    ok(&app, &["block", "ip", "192.0.2.7", "--project", "demo"]);
    ok(&app, &["unblock", "ip", "192.0.2.7", "--project", "demo"]);
    ok(&app, &["target", "demo", "rsync://h/m/:downloader/"]);
    ok(
        &app,
        &["target", "demo", "rsync://h/m/:downloader/", "--remove"],
    );
    let items = TempFile::new("items", b"a\nb\nc\n");
    ok(&app, &["items", "add", "demo", items.path()]);
    ok(&app, &["check", "demo", "--recount"]);
    let made = app.cli(
        &["admin", "create-user", "carol", "--global"],
        b"a long password\n",
    );
    assert!(made.ok, "{}", made.err);
    let reset = app.cli(&["admin", "reset-password", "carol"], b"another password\n");
    assert!(reset.ok, "{}", reset.err);

    let log = audit(&app).await;
    let mut seen: Vec<(&str, &str, u64, &str)> = log
        .iter()
        .rev()
        .map(|e| {
            assert_eq!(e.who, "cli", "{e:?}");
            (
                e.action.as_str(),
                e.project.as_str(),
                e.count,
                e.detail.as_str(),
            )
        })
        .collect();
    seen.iter_mut()
        .filter(|e| e.0 == "settings.save")
        .for_each(|e| e.3 = "");
    assert_eq!(
        seen,
        [
            ("project.create", "demo", 0, "Demo"),
            ("settings.save", "demo", 0, ""),
            ("block", "demo", 1, "ip 192.0.2.7"),
            ("unblock", "demo", 1, "ip 192.0.2.7"),
            ("target.activate", "demo", 0, "rsync://h/m/:downloader/"),
            ("target.remove", "demo", 0, "rsync://h/m/:downloader/"),
            ("items.add", "demo", 3, "queue=todo"),
            ("project.recount", "demo", 3, "was 3"),
            ("user.create", "", 1, "carol global"),
            ("user.update", "", 1, "carol password"),
        ]
    );
    let save = log.iter().find(|e| e.action == "settings.save").unwrap();
    assert_eq!(save.detail, "burst,rate", "the settings that changed");
}

#[tokio::test]
async fn the_cli_validates_blocks_like_the_panel() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    let long = "x".repeat(257);
    // (kind, value, project): each refused by both doors.
    let bad: [(&str, &str, Option<&str>); 6] = [
        ("ip", "not-an-ip", None),
        ("ip", "192.0.2.300", Some("p")),
        ("downloader", "alice", None),
        ("dl", "  ", None),
        ("dl", &long, None),
        ("dl", "alice", Some("nope")),
    ];
    for (kind, value, project) in bad {
        let mut args = vec!["block", kind, value];
        args.extend(project.iter().flat_map(|p| ["--project", p]));
        let run = app.cli(&args, b"");
        assert!(!run.ok, "the CLI refuses {args:?}");
        let body = serde_json::json!({"kind": kind, "value": value, "project": project});
        let r = panel(&app, "/admin/api/blocks", body.to_string()).await;
        assert!(
            [400, 404].contains(&r.status),
            "the panel refuses {args:?}: {} {}",
            r.status,
            r.body
        );
        assert!(
            run.err.contains(r.body.trim_matches('"')) || r.status == 404,
            "the same reason: CLI {:?}, panel {:?}",
            run.err,
            r.body
        );
    }
    for kind in [BlockKind::Ip, BlockKind::Downloader] {
        assert!(app
            .store
            .projects()
            .blocks(None, kind)
            .await
            .unwrap()
            .is_empty());
        assert!(app
            .store
            .projects()
            .blocks(Some("p"), kind)
            .await
            .unwrap()
            .is_empty());
    }

    // Accepted alike: the value trimmed, the reason cut to 500 characters.
    let reason = "r".repeat(600);
    ok(&app, &["block", "ip", " 2001:db8::1 ", "--reason", &reason]);
    let body = serde_json::json!({"kind": "dl", "value": " mallory ", "reason": reason});
    assert_eq!(
        panel(&app, "/admin/api/blocks", body.to_string())
            .await
            .status,
        204
    );
    let ips = app
        .store
        .projects()
        .blocks(None, BlockKind::Ip)
        .await
        .unwrap();
    let names = app
        .store
        .projects()
        .blocks(None, BlockKind::Downloader)
        .await
        .unwrap();
    assert_eq!(ips["2001:db8::1"].reason.len(), 500);
    assert_eq!(names["mallory"].reason.len(), 500);
    let run = app.cli(&["unblock", "dl", "nobody"], b"");
    assert!(
        !run.ok && run.err.contains("nobody is not blocked"),
        "{}",
        run.err
    );
}

#[tokio::test]
async fn the_cli_reads_gzip_and_zstd_item_files_like_the_panel() {
    let app = TestApp::start().await;
    app.project("cli", &[]).await;
    app.project("panel", &[]).await;
    // Each encoding carries items of its own, so a decoder that yields nothing cannot pass.
    let lines = |tag: &str| -> String { (0..30_000).map(|i| format!("{tag}-{i}\r\n")).collect() };
    let (plain, gz, zst) = (lines("plain"), lines("gzip"), lines("zstd"));
    for (queue, body) in [
        ("todo", plain.clone().into_bytes()),
        ("todo:secondary", gzip(gz.as_bytes())),
        ("todo:redo", zstd(zst.as_bytes())),
    ] {
        let file = TempFile::new("items", &body);
        let out = ok(
            &app,
            &["items", "add", "cli", "--queue", queue, file.path()],
        );
        let r = panel(&app, &format!("/admin/api/panel/items?queue={queue}"), body).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let panel_count: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(panel_count["count"], 30_000, "{queue}: {}", r.body);
        assert_eq!(out.trim(), format!("30000 new items added to cli {queue}"));
    }
    for slug in ["cli", "panel"] {
        let (_, counts) = app
            .store
            .figures()
            .snapshot(slug, 0, 0)
            .await
            .unwrap()
            .unwrap();
        for queue in ["todo", "todo:secondary", "todo:redo"] {
            assert_eq!(
                counts.iter().find(|(q, _)| q == queue).map(|(_, n)| *n),
                Some(30_000),
                "{slug} {queue}: {counts:?}"
            );
        }
    }
    let status = app
        .store
        .queue()
        .item_status("panel", "zstd-29999")
        .await
        .unwrap();
    assert_eq!(
        status.state.as_deref(),
        Some("todo"),
        "the last zstd line, whole"
    );
    // From standard input too.
    let run = app.cli(&["items", "add", "cli", "-"], &gzip(b"more\n"));
    assert!(
        run.ok && run.out.contains("1 new items"),
        "{} {}",
        run.out,
        run.err
    );
    app.assert_invariant("cli").await;
}

/// The longest item is one setting, `TRACKER_MAX_ITEM`, for the warrior API, the panel and the
/// command line alike.
#[tokio::test]
async fn both_doors_take_the_configured_longest_item() {
    let app = TestApp::start_with(|c| c.limits.item = 20).await;
    app.project("cli", &[]).await;
    app.project("panel", &[]).await;
    let body = format!("short\n{}\n", "x".repeat(21));
    let file = TempFile::new("long", body.as_bytes());
    let r = panel(&app, "/admin/api/panel/items", body.clone().into_bytes()).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("at most 20 bytes"), "{}", r.body);
    let path = file.path().to_string();
    let run = app.cli_with(
        &["items", "add", "cli", &path],
        &[("TRACKER_MAX_ITEM", "20")],
        b"",
    );
    assert!(
        !run.ok && run.err.contains("at most 20 bytes"),
        "{} {}",
        run.out,
        run.err
    );
    // Nothing of the refused file was added; 21 bytes pass where the setting allows them.
    let run = app.cli_with(
        &["items", "add", "cli", &path],
        &[("TRACKER_MAX_ITEM", "21")],
        b"",
    );
    assert!(
        run.ok && run.out.contains("2 new items"),
        "{} {}",
        run.out,
        run.err
    );
    assert_eq!(app.counts("cli").await.todo, 2);
}

#[tokio::test]
async fn both_doors_refuse_the_same_bad_input() {
    let app = TestApp::start().await;
    app.project("cli", &[]).await;
    app.project("panel", &[]).await;
    let long = format!("ok\n{}\n", "x".repeat(5000));
    let bad_lines: [&[u8]; 3] = [b"a\nb\0c\n", long.as_bytes(), b"a\n\xff\n"];
    for body in bad_lines {
        let file = TempFile::new("bad", body);
        let run = app.cli(&["items", "add", "cli", file.path()], b"");
        let r = panel(&app, "/admin/api/panel/items", body.to_vec()).await;
        assert_eq!(r.status, 400, "{}", r.body);
        assert!(!run.ok, "the CLI refuses a bad line: {}", run.out);
        let reason = r.body.trim_matches('"');
        assert!(
            reason.contains("is not UTF-8, too long or has NUL"),
            "{reason}"
        );
        assert!(
            run.err.contains(reason),
            "CLI {:?}, panel {reason:?}",
            run.err
        );
    }
    assert_eq!(app.counts("cli").await.todo, 0, "nothing of a refused file");
    assert_eq!(app.counts("panel").await.todo, 0);
    let run = app.cli(
        &["items", "add", "cli", "--queue", "todo:nope", "-"],
        b"a\n",
    );
    assert!(!run.ok);
    let r = panel(&app, "/admin/api/panel/items?queue=todo:nope", "a\n").await;
    assert_eq!(r.status, 400);
    // A downloader's personal queue is a queue for both.
    ok(
        &app,
        &[
            "items",
            "add",
            "cli",
            "--queue",
            "todo:d:alice",
            "/dev/null",
        ],
    );
    let r = panel(&app, "/admin/api/panel/items?queue=todo:d:alice", "a\n").await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Projects: slugs, titles and byte domains.
    for (slug, title, domains) in [
        ("Bad Slug", "t", "data"),
        ("admin", "t", "data"),
        ("fine", "t", "a\"b"),
        ("fine", &"t".repeat(201) as &str, "data"),
    ] {
        let run = app.cli(
            &[
                "project",
                "create",
                slug,
                "--title",
                title,
                "--domains",
                domains,
            ],
            b"",
        );
        assert!(!run.ok, "the CLI refuses {slug:?} {domains:?}");
        let body = serde_json::json!({"slug": slug, "title": title, "domains": domains.split(',').collect::<Vec<_>>()});
        let r = panel(&app, "/admin/api/projects", body.to_string()).await;
        assert_eq!(r.status, 400, "the panel refuses {slug:?}: {}", r.body);
        assert!(
            run.err.contains(r.body.trim_matches('"')),
            "CLI {:?}, panel {:?}",
            run.err,
            r.body
        );
    }
    assert!(app
        .store
        .projects()
        .project("fine")
        .await
        .unwrap()
        .is_none());
    // A slug the command line would read as an option (found by the schema fuzzer).
    let body = serde_json::json!({"slug": "-1", "title": "t"});
    let r = panel(&app, "/admin/api/projects", body.to_string()).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body.contains("starting with a letter or digit"),
        "{}",
        r.body
    );
    let run = app.cli(&["project", "create", "--", "-1"], b"");
    assert!(
        !run.ok && run.err.contains("starting with a letter or digit"),
        "{}",
        run.err
    );
    assert!(app.store.projects().project("-1").await.unwrap().is_none());
    let run = app.cli(&["project", "create", "cli"], b"");
    assert!(
        !run.ok && run.err.contains("That project exists."),
        "{}",
        run.err
    );

    // Settings: the checks the panel made alone are the CLI's too.
    let min_version = format!("min_version={}", "1".repeat(65));
    let changes = [
        "bloom_capacity=0",
        &min_version,
        "domains=",
        r#"extra={"items":"x"}"#,
        r#"pattern_limits=[{"name":"a","pattern":"x","rate":1,"burst":1},{"name":"a","pattern":"y","rate":1,"burst":1}]"#,
        "title= ",
    ];
    for change in changes {
        let run = app.cli(&["project", "set", "cli", change], b"");
        assert!(!run.ok, "the CLI refuses {change}: {}", run.out);
    }
    let before = app.store.projects().project("cli").await.unwrap().unwrap();
    assert_eq!(before.bloom_capacity, 1_000_000, "nothing saved");
    assert!(audit(&app)
        .await
        .iter()
        .all(|e| e.action != "settings.save"));
}
