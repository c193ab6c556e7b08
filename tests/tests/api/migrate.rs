//! `tracker migrate`: a database written in the universal tracker's exact layout (ArchiveTeam's
//! `models/tracker/*.rb`: set queues, `out` in seconds beside `claims` of "IP DOWNLOADER",
//! `done` and a larger `done_counter`, hex charts, log lists, bcrypt users) is surveyed by a dry
//! run that changes nothing, then carried over: items in the same states, the same totals on the
//! pages, settings, blocks, targets, logs to files, accounts whose old passwords log in; run
//! again or resumed after a kill, it changes nothing twice.

use fred::prelude::*;
use server::store::{BlockKind, Role};
use std::time::Duration;
use tests::{panel::log_in_from, start_redis, wait_for, TestApp};

const SLUG: &str = "oldproj";

/// A client of the old tracker's Redis (a private `redis-server` on a unix socket).
async fn old_client(url: &str) -> Client {
    let path = url.strip_prefix("redis+unix://").expect("a socket url");
    let config = Config {
        server: ServerConfig::new_unix_socket(path),
        ..Config::default()
    };
    let client = Builder::from_config(config).build().unwrap();
    client.init().await.unwrap();
    client
}

/// The old tracker's `redis-server`, stopped on drop (a failed test too).
struct OldRedis(std::process::Child);

impl Drop for OldRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `redis-server` of its own for the old tracker, and its URL.
fn old_redis(app: &TestApp) -> (OldRedis, String) {
    let dir = app.dir.join("old");
    std::fs::create_dir_all(&dir).unwrap();
    let (child, url) = start_redis(&dir);
    (OldRedis(child), url)
}

fn bcrypt(password: &str) -> String {
    bcrypt::hash_with_result(password, 4)
        .unwrap()
        .format_for_version(bcrypt::Version::TwoA)
}

/// Writes one project, its users and its quirks as the old tracker would have.
async fn seed(old: &Client) {
    let config = serde_json::json!({
        "title": "Old project", "item_type": "items", "domains": {"data": "data", "extra": "extra"},
        "valid_item_regexp": "[-_.A-Za-z0-9]{2,50}", "min_script_version": "20130101.01",
        "moving_average_interval": 120, "history_length": 1000, "ignore_global_blocked": true
    });
    let k = |name: &str| format!("{SLUG}:{name}");
    let _: () = old
        .hset("trackers", (SLUG, config.to_string()))
        .await
        .unwrap();
    let _: () = old
        .sadd(k("todo"), vec!["q1", "q2", "q3", "q4", "q5", "dup1"])
        .await
        .unwrap();
    let _: () = old.sadd(k("todo:secondary"), "s1").await.unwrap();
    let _: () = old.sadd(k("todo:d:alice"), "p1").await.unwrap();
    // c3 is in `out` without a claim record, c4 has a record but is not in `out`.
    let out = vec![
        (1_363_523_640.0, "c1"),
        (1_363_523_700.0, "c2"),
        (1_363_523_800.0, "c3"),
    ];
    let _: () = old
        .zadd(k("out"), None, None, false, false, out)
        .await
        .unwrap();
    let claims = vec![
        ("c1", "203.0.113.5 alice"),
        ("c2", "2001:db8::1 bob"),
        ("c4", "198.51.100.7 carol"),
    ];
    let _: () = old.hset(k("claims"), claims).await.unwrap();
    // dup1 is queued and done at once: the old tracker says it is queued.
    let _: () = old
        .sadd(k("done"), vec!["d1", "d2", "d3", "d4", "d5", "d6", "dup1"])
        .await
        .unwrap();
    let _: () = old
        .set(k("done_counter"), "10", None, None, false)
        .await
        .unwrap();
    let _: () = old
        .hset(k("downloader_count"), vec![("alice", "6"), ("bob", "3")])
        .await
        .unwrap();
    let _: () = old
        .hset(
            k("downloader_bytes"),
            vec![("alice", "6000"), ("bob", "3000")],
        )
        .await
        .unwrap();
    let _: () = old
        .hset(
            k("downloader_version"),
            vec![("alice", "20130317.01"), ("bob", "")],
        )
        .await
        .unwrap();
    let _: () = old
        .hset(k("domain_bytes"), vec![("data", "8000"), ("extra", "1000")])
        .await
        .unwrap();
    let _: () = old
        .append(
            k("chart:total_items"),
            "201303171234=00000005 201303171236=0000000a ",
        )
        .await
        .unwrap();
    let _: () = old
        .append(
            k("chart:total_bytes"),
            "201303171234=0000000000fa0 201303171235=0000000002328 ",
        )
        .await
        .unwrap();
    let _: () = old
        .append(
            k("chart:downloader_bytes:alice"),
            "201303171234=0000000000bb8 201303171236=0000000001770 ",
        )
        .await
        .unwrap();
    let entry = |item: &str| {
        serde_json::json!({"item": item, "by": "alice", "ip": "203.0.113.5", "ua": "Warrior",
            "at": "2013-03-17T12:34:56Z", "bytes": {"data": 1000}, "version": "20130317.01"})
        .to_string()
    };
    let _: () = old
        .rpush(k("log"), vec![entry("d5"), entry("d6")])
        .await
        .unwrap();
    let _: () = old
        .rpush(k("log:2013-04-17T21:12:34Z"), entry("d1"))
        .await
        .unwrap();
    let _: () = old
        .sadd(k("blocked"), vec!["192.0.2.9", "badguy"])
        .await
        .unwrap();
    let _: () = old
        .sadd(
            k("upload_target"),
            "rsync://fos.example.org:1234/oldproj/:downloader/",
        )
        .await
        .unwrap();
    let _: () = old
        .sadd(
            k("inactive_upload_target"),
            "rsync://old.example.org/oldproj/",
        )
        .await
        .unwrap();
    let _: () = old
        .set(k("extra_parameters"), "data['x'] = 1", None, None, false)
        .await
        .unwrap();
    let _: () = old
        .set(k("requests_per_minute"), "120", None, None, false)
        .await
        .unwrap();
    let _: () = old
        .set(k("min_downloader_budget"), "-50", None, None, false)
        .await
        .unwrap();
    let _: () = old
        .set(k("requests_processed:05"), "3", None, None, false)
        .await
        .unwrap();
    let _: () = old.sadd(k("tracker_admins"), "projadmin").await.unwrap();
    let users = vec![
        ("globaladm", bcrypt("global password")),
        ("projadmin", bcrypt("project password")),
        ("admin", bcrypt("admin password")),
    ];
    let _: () = old.hset("users", users).await.unwrap();
    let _: () = old.sadd("admins", "globaladm").await.unwrap();
    let _: () = old.sadd("global_blocked", "198.51.100.99").await.unwrap();
    let _: () = old
        .set("mystery:key", "1", None, None, false)
        .await
        .unwrap();
    let list = serde_json::json!({"warrior": {"seesaw_version": "0.8.5"}, "auto_project": SLUG,
        "projects": [{"name": SLUG, "title": "Old project", "description": "<b>old</b><script>x</script>",
            "repository": "https://github.com/ArchiveTeam/oldproj-grab", "lat_lng": [0, 0]}]});
    let _: () = old
        .set(
            "warriorhq:projects_json",
            list.to_string(),
            None,
            None,
            false,
        )
        .await
        .unwrap();
}

fn migrate(app: &TestApp, url: &str, more: &[&str]) -> tests::CliRun {
    let logs = app.dir.join("logs");
    let mut args = vec![
        "migrate",
        "--from",
        url,
        "--log-dir",
        logs.to_str().unwrap(),
    ];
    args.extend(more);
    app.cli(&args, b"")
}

/// What the project holds: queue todo, secondary, personal, claimed, done items, bytes.
async fn figures(app: &TestApp) -> (u64, u64, u64, u64, u64, u64) {
    let (board, _) = app
        .store
        .figures()
        .snapshot(SLUG, 0, 0)
        .await
        .unwrap()
        .unwrap();
    let k = app.store.keys().project(SLUG);
    let mut q = vec![];
    for part in ["todo", "todo:secondary", "todo:d:alice"] {
        q.push(
            app.store
                .client()
                .zcard::<u64, _>(k.key(part))
                .await
                .unwrap(),
        );
    }
    (
        q[0],
        q[1],
        q[2],
        board.counts.out,
        board.counts.done,
        board.total_bytes,
    )
}

#[tokio::test]
async fn a_universal_tracker_is_carried_over_whole() {
    let app = TestApp::start().await;
    let (_redis, url) = old_redis(&app);
    let old = old_client(&url).await;
    seed(&old).await;

    let dry = migrate(&app, &url, &["--dry-run"]);
    assert!(dry.ok, "{}", dry.err);
    for said in [
        "oldproj",
        "queue todo",
        "personal queues",
        "mystery:key",
        "extra_parameters",
        "not carried",
        "dry run",
    ] {
        assert!(dry.out.contains(said), "{said:?} missing from {}", dry.out);
    }
    assert!(
        app.store.projects().project(SLUG).await.unwrap().is_none(),
        "a dry run changed nothing"
    );

    let run = migrate(&app, &url, &["--hq-from", &url]);
    assert!(run.ok, "{}\n{}", run.out, run.err);
    assert!(
        run.out.contains("oldproj: check clean, active"),
        "{}",
        run.out
    );
    let list = app
        .store
        .fleet()
        .warrior_projects()
        .await
        .unwrap()
        .expect("Warrior HQ's list carried");
    assert!(
        list.contains("oldproj-grab") && !list.contains("<script>"),
        "{list}"
    );
    // Queued (dup1 as the old tracker said), claimed (c3 by `unknown`, c4 from its record), done
    // 6 listed + 4 only counted = done_counter, bytes = domain_bytes.
    assert_eq!(figures(&app).await, (6, 1, 1, 4, 10, 9000));
    let c1 = app.store.queue().item_status(SLUG, "c1").await.unwrap();
    assert_eq!(c1.downloader.as_deref(), Some("alice"));
    let c3 = app.store.queue().item_status(SLUG, "c3").await.unwrap();
    assert_eq!(c3.downloader.as_deref(), Some("unknown"));
    let (board, _) = app
        .store
        .figures()
        .snapshot(SLUG, 10, 0)
        .await
        .unwrap()
        .unwrap();
    let alice = board
        .downloaders
        .iter()
        .find(|d| d.name == "alice")
        .expect("alice on the board");
    assert_eq!((alice.items, alice.bytes), (6, 6000));
    let s = app.store.projects().project(SLUG).await.unwrap().unwrap();
    assert_eq!(s.title, "Old project");
    assert_eq!(s.domains, vec!["data", "extra"]);
    assert_eq!(s.min_version, "20130101.01");
    assert!(s.ignore_global_blocks);
    assert_eq!(
        (s.rate, s.dl_max_claims, s.state.as_str()),
        (2.0, 50, "active")
    );
    let store = &app.store;
    let blocked = async |scope, kind| store.projects().blocks(scope, kind).await.unwrap();
    assert!(blocked(Some(SLUG), BlockKind::Ip)
        .await
        .contains_key("192.0.2.9"));
    assert!(blocked(Some(SLUG), BlockKind::Downloader)
        .await
        .contains_key("badguy"));
    assert!(blocked(None, BlockKind::Ip)
        .await
        .contains_key("198.51.100.99"));
    let targets = app.store.projects().upload_targets(SLUG).await.unwrap();
    assert!(
        targets.contains(&(
            "rsync://fos.example.org:1234/oldproj/:downloader/".into(),
            true
        )),
        "{targets:?}"
    );
    assert!(
        targets.contains(&("rsync://old.example.org/oldproj/".into(), false)),
        "{targets:?}"
    );
    let log = std::fs::read_to_string(app.dir.join("logs").join(SLUG).join("log.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 2);
    let archive = app
        .dir
        .join("logs")
        .join(SLUG)
        .join("log_2013-04-17T21_12_34Z.jsonl");
    assert_eq!(std::fs::read_to_string(archive).unwrap().lines().count(), 1);
    app.assert_invariant(SLUG).await;

    // The old passwords log in; the first login replaces the bcrypt hash with argon2.
    assert_eq!(
        log_in_from(&app, "192.0.2.1", "globaladm", "global password")
            .await
            .status,
        200
    );
    let global = app
        .store
        .people()
        .account("globaladm")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(global.role, Role::Global);
    assert!(global.hash.starts_with("$argon2"), "{}", global.hash);
    assert_eq!(
        log_in_from(&app, "192.0.2.1", "globaladm", "global password")
            .await
            .status,
        200
    );
    assert_eq!(
        log_in_from(&app, "192.0.2.1", "projadmin", "wrong password")
            .await
            .status,
        401
    );
    let project = app
        .store
        .people()
        .account("projadmin")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (project.role, project.projects.clone()),
        (Role::Project, vec![SLUG.to_string()])
    );
    assert!(
        project.hash.starts_with("$2a$"),
        "a failed login keeps the old hash"
    );
    assert!(
        app.store
            .people()
            .account("admin-ut")
            .await
            .unwrap()
            .is_some(),
        "a reserved name is renamed"
    );

    // Again, and resumed: nothing twice.
    for more in [&[][..], &["--resume"][..]] {
        let again = migrate(&app, &url, more);
        assert!(again.ok, "{}", again.err);
        assert_eq!(figures(&app).await, (6, 1, 1, 4, 10, 9000));
        app.assert_invariant(SLUG).await;
    }
}

#[tokio::test]
async fn a_migration_killed_halfway_resumes_without_losing_or_doubling() {
    let app = TestApp::start().await;
    let (_redis, url) = old_redis(&app);
    let old = old_client(&url).await;
    let config = serde_json::json!({"title": "Big", "domains": {"data": "data"}});
    let _: () = old
        .hset("trackers", (SLUG, config.to_string()))
        .await
        .unwrap();
    const N: usize = 300_000;
    for chunk in (0..N).collect::<Vec<_>>().chunks(10_000) {
        let items: Vec<String> = chunk.iter().map(|i| format!("item-{i}")).collect();
        let _: () = old.sadd(format!("{SLUG}:done"), items).await.unwrap();
    }
    let _: () = old
        .set(
            format!("{SLUG}:done_counter"),
            N.to_string(),
            None,
            None,
            false,
        )
        .await
        .unwrap();
    let _: () = old
        .hset(format!("{SLUG}:downloader_count"), ("alice", N.to_string()))
        .await
        .unwrap();

    let logs = app.dir.join("logs");
    let mut child = std::process::Command::new(tests::tracker_bin())
        .args([
            "migrate",
            "--from",
            &url,
            "--log-dir",
            logs.to_str().unwrap(),
        ])
        .env("REDIS_URL", &app.redis_url)
        .env("TRACKER_NAMESPACE", &app.namespace)
        .env("TRACKER_OFFLOAD_DIR", app.dir.join("offload"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once it has written some pages of `done`, not all.
    let checkpoint = app.store.keys().migration(&url);
    let client = app.store.client().clone();
    wait_for("a page of done imported", Duration::from_secs(60), || {
        let (client, checkpoint) = (client.clone(), checkpoint.clone());
        async move {
            let at: Option<String> = client
                .hget(&checkpoint, format!("{SLUG}:done"))
                .await
                .unwrap();
            at.filter(|c| c != "done").map(|_| ())
        }
    })
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = app.counts(SLUG).await.done;
    assert!(partial < N as u64, "killed halfway: {partial}");

    let run = migrate(&app, &url, &["--resume"]);
    assert!(run.ok, "{}\n{}", run.out, run.err);
    assert_eq!(app.counts(SLUG).await.done, N as u64);
    app.assert_invariant(SLUG).await;
}

#[tokio::test]
async fn a_project_made_here_is_not_touched() {
    let app = TestApp::start().await;
    app.project(SLUG, &["mine"]).await;
    let (_redis, url) = old_redis(&app);
    let old = old_client(&url).await;
    let _: () = old
        .hset("trackers", (SLUG, r#"{"title":"Theirs"}"#))
        .await
        .unwrap();
    let _: () = old.sadd(format!("{SLUG}:todo"), "theirs").await.unwrap();
    let run = migrate(&app, &url, &[]);
    assert!(run.ok, "{}", run.err);
    assert!(run.out.contains("not touched"), "{}", run.out);
    let s = app.store.projects().project(SLUG).await.unwrap().unwrap();
    assert_ne!(s.title, "Theirs");
    assert_eq!(app.counts(SLUG).await.todo, 1, "its own item only");
}

/// What a damaged or foreign database may hold at one of the keys `migrate` reads.
#[derive(Clone, Debug)]
enum Damage {
    /// A value of another type than the old tracker wrote.
    String(String),
    Set(Vec<String>),
    Hash(Vec<(String, String)>),
    List(Vec<String>),
    Zset(Vec<(f64, String)>),
}

impl Damage {
    /// The same values as a value of Redis type `ty` (`TYPE`'s answer; `none`: as it is).
    fn into_type(self, ty: &str) -> Damage {
        let texts: Vec<String> = match self.clone() {
            Damage::String(s) => vec![s],
            Damage::Set(v) | Damage::List(v) => v,
            Damage::Hash(v) => v.into_iter().flat_map(|(a, b)| [a, b]).collect(),
            Damage::Zset(v) => v.into_iter().map(|(_, s)| s).collect(),
        };
        match ty {
            "string" => Damage::String(texts.into_iter().next().unwrap_or_default()),
            "set" => Damage::Set(texts),
            "list" => Damage::List(texts),
            "hash" => Damage::Hash(
                texts
                    .chunks(2)
                    .map(|c| (c[0].clone(), c.get(1).cloned().unwrap_or_default()))
                    .collect(),
            ),
            "zset" => Damage::Zset(
                texts
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| (i as f64 - 1.0, s))
                    .collect(),
            ),
            _ => self,
        }
    }
}

fn damage() -> impl proptest::strategy::Strategy<Value = Damage> {
    use proptest::prelude::*;
    let text = prop_oneof![
        4 => "[ -~]{0,30}",
        1 => "\\PC{0,20}",
        1 => Just("{\"title\": 5, \"domains\": []}".to_string()),
        1 => Just("not json".to_string()),
        1 => Just("-1".to_string()),
        1 => Just("1e400".to_string()),
        1 => Just("203.0.113.5".to_string()),
        1 => (0usize..20_000).prop_map(|n| "x".repeat(n)),
    ];
    let texts = proptest::collection::vec(text.clone(), 0..6);
    prop_oneof![
        text.clone().prop_map(Damage::String),
        texts.clone().prop_map(Damage::Set),
        proptest::collection::vec((text.clone(), text.clone()), 0..6).prop_map(Damage::Hash),
        texts.prop_map(Damage::List),
        proptest::collection::vec((-1e12f64..1e12, text), 0..6).prop_map(Damage::Zset),
    ]
}

/// The keys of the old layout `migrate` reads ([`seed`] writes them).
const READ_KEYS: [&str; 24] = [
    "trackers",
    "users",
    "admins",
    "global_blocked",
    "warriorhq:projects_json",
    "oldproj:todo",
    "oldproj:todo:secondary",
    "oldproj:todo:d:alice",
    "oldproj:out",
    "oldproj:claims",
    "oldproj:done",
    "oldproj:done_counter",
    "oldproj:downloader_count",
    "oldproj:downloader_bytes",
    "oldproj:downloader_version",
    "oldproj:domain_bytes",
    "oldproj:chart:total_items",
    "oldproj:chart:total_bytes",
    "oldproj:log",
    "oldproj:blocked",
    "oldproj:upload_target",
    "oldproj:requests_per_minute",
    "oldproj:min_downloader_budget",
    "oldproj:tracker_admins",
];

/// A foreign database with damage at the keys `migrate` reads is surveyed and carried over, or
/// refused with a reason, never a crash; whatever it carried over keeps the invariant.
/// `PROPTEST_CASES` sets how many (default 16 here).
#[test]
fn a_damaged_foreign_database_is_refused_or_carried_over_never_a_crash() {
    use proptest::{prelude::*, test_runner::TestRunner};
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let app = rt.block_on(TestApp::start());
    let (_old, url) = old_redis(&app);
    let old = rt.block_on(old_client(&url));
    let mut runner = TestRunner::new(proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..Default::default()
    });
    let case = std::cell::Cell::new(0u32);
    let carried = std::cell::Cell::new(0u32);
    // Mostly values of the key's own type (bad contents, which the import must read or
    // refuse), sometimes of another type (refused by the survey: tested on its own below).
    let damages = proptest::collection::vec(
        (0..READ_KEYS.len(), damage(), proptest::bool::weighted(0.75)),
        1..5,
    );
    runner
        .run(&damages, |damages| {
            case.set(case.get() + 1);
            rt.block_on(async {
                let _: () = old.flushall(false).await.unwrap();
                seed(&old).await;
                for (key, d, own_type) in &damages {
                    let key = READ_KEYS[*key];
                    let d = if *own_type {
                        let ty: String = old.custom(fred::cmd!("TYPE"), vec![key]).await.unwrap();
                        d.clone().into_type(&ty)
                    } else {
                        d.clone()
                    };
                    let _: i64 = old.del(key).await.unwrap();
                    let _: () = match d {
                        Damage::String(v) => old.set(key, v, None, None, false).await.unwrap(),
                        Damage::Set(v) if !v.is_empty() => {
                            old.sadd(key, v).await.map(|_: i64| ()).unwrap()
                        }
                        Damage::Hash(v) if !v.is_empty() => {
                            old.hset(key, v).await.map(|_: i64| ()).unwrap()
                        }
                        Damage::List(v) if !v.is_empty() => {
                            old.rpush(key, v).await.map(|_: i64| ()).unwrap()
                        }
                        Damage::Zset(v) if !v.is_empty() => old
                            .zadd(key, None, None, false, false, v)
                            .await
                            .map(|_: i64| ())
                            .unwrap(),
                        _ => (),
                    };
                }
                // A target of its own for each case: a namespace no case shared.
                let ns = format!("{}c{}", app.namespace, case.get());
                let logs = app.dir.join(format!("logs{}", case.get()));
                for dry in [true, false] {
                    let mut args = vec![
                        "migrate",
                        "--from",
                        &url,
                        "--log-dir",
                        logs.to_str().unwrap(),
                    ];
                    if dry {
                        args.push("--dry-run");
                    }
                    let run = app.cli_with(&args, &[("TRACKER_NAMESPACE", &ns)], b"");
                    let what = format!("{damages:?} dry={dry}: {}{}", run.out, run.err);
                    if std::env::var("MIGRATE_FUZZ_SHOW").is_ok() {
                        eprintln!("{what}");
                    }
                    prop_assert!(!run.err.contains("panicked"), "{}", what);
                    prop_assert!(
                        run.ok || !run.err.trim().is_empty(),
                        "a refusal says why: {}",
                        what
                    );
                }
                let store =
                    server::store::Store::connect(&app.redis_url, &ns, 1, app.dir.join("offload"))
                        .await
                        .unwrap();
                let slugs = store.projects().project_slugs().await.unwrap();
                carried.set(carried.get() + u32::from(!slugs.is_empty()));
                for slug in slugs {
                    let problems = store.upkeep().check(&slug).await.unwrap();
                    prop_assert!(
                        problems.is_empty(),
                        "{:?}: {} {:?}",
                        damages,
                        slug,
                        problems
                    );
                }
                Ok(())
            })
        })
        .unwrap();
    assert!(
        carried.get() > 0,
        "no case carried a project over: the damage never reached it"
    );
}

/// A key the import reads holding another type than the old tracker wrote (found by the
/// property test above: `done_counter` as a hash stopped the import half-way, the downloaders
/// carried and the figures not) is named by the survey, and the migration refuses before it
/// writes anything.
#[tokio::test]
async fn a_key_of_the_wrong_type_is_named_and_nothing_is_migrated() {
    let app = TestApp::start().await;
    let (_old, url) = old_redis(&app);
    let old = old_client(&url).await;
    seed(&old).await;
    let key = format!("{SLUG}:done_counter");
    let _: i64 = old.del(&key).await.unwrap();
    let _: i64 = old.hset(&key, ("a", "b")).await.unwrap();
    let dry = migrate(&app, &url, &["--dry-run"]);
    assert!(dry.ok, "{}", dry.err);
    assert!(
        dry.out
            .contains("oldproj:done_counter is a hash, the universal tracker wrote a string"),
        "{}",
        dry.out
    );
    let run = migrate(&app, &url, &[]);
    assert!(!run.ok);
    assert!(
        run.err.contains("nothing migrated") && run.err.contains("oldproj:done_counter is a hash"),
        "{}",
        run.err
    );
    assert!(app.store.projects().project(SLUG).await.unwrap().is_none());
    assert!(app.store.people().accounts().await.unwrap().is_empty());
}
