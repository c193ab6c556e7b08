//! The short chaos run of `make test` (issue 18): 20,000 items, 40 warriors (some dropping
//! items, some reporting late after a reclaim), 3 tracker processes on one durable Redis; 4
//! processes and 2 Redis servers killed with SIGKILL under load; then every item must be done
//! exactly once and credited to a warrior that was told OK for it. `make chaos` runs the long one.

use tests::{chaos, tracker_bin, TestApp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_processes_and_redis_under_load_loses_nothing_and_counts_nothing_twice(
) -> Result<(), String> {
    prove(chaos::Config::short(tracker_bin())).await.map(drop)
}

/// The same run with three processes on three empty directories of their own and their
/// segments in one bucket of a real S3-speaking server, which is killed and paused too
/// (issue 55): 0 lost, 0 counted twice, `tracker check` clean, every offloaded item read back
/// from the bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_processes_redis_and_the_object_store_loses_nothing_and_counts_nothing_twice(
) -> Result<(), String> {
    let cfg = chaos::Config::short_object_store(tracker_bin());
    let report = prove(cfg).await?;
    if report.object_kills < 2 || report.object_pauses < 1 {
        return Err(format!(
            "expected 2 object server kills and a pause; the run: {report}"
        ));
    }
    Ok(())
}

/// Runs `cfg` and checks that its report proves what the run is for.
async fn prove(cfg: chaos::Config) -> Result<chaos::Report, String> {
    let report = chaos::run(&cfg).await;
    eprintln!("{report}");
    // A failure is returned, not panicked: the harness prints it last, on one line, reason
    // first, where a log's tail shows it (a panic's backtrace would come after it).
    let failed = |why: String| Err(format!("{why}; the run: {report}"));
    if !report.violations.is_empty() {
        return failed(format!("violations: {:?}", report.violations));
    }
    let expected = [
        ("4 process kills", report.process_kills.len() >= 4),
        ("2 redis kills", report.redis_kills.len() >= 2),
        ("a redis pause", !report.redis_pauses.is_empty()),
        ("20,000 items done", report.verdict.done >= 20_000),
        ("items offloaded", report.verdict.on_disk > 0),
    ];
    for (what, happened) in expected {
        if !happened {
            return failed(format!("expected {what}, which did not happen"));
        }
    }
    // What the run is meant to exercise did happen.
    for what in ["items dropped", "late reports after a reclaim"] {
        if report.counters.get(what).copied().unwrap_or(0) == 0 {
            return failed(format!("no {what}"));
        }
    }
    Ok(report)
}

/// The proof itself is honest: it passes a clean project, and fails one with an acknowledged
/// item missing, one counted twice, or one credited to a warrior that was never told OK.
#[tokio::test]
async fn the_chaos_proof_sees_a_lost_item_a_double_count_and_a_credit_without_an_ok() {
    use fred::prelude::*;
    let app = TestApp::start().await;
    let names: Vec<String> = (0..6).map(chaos::item_name).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    app.project(chaos::SLUG, &refs).await;
    assert_eq!(app.claim_all(chaos::SLUG).await, 6);
    let mut ledgers = vec![
        chaos::Ledger {
            name: "alice".into(),
            ..Default::default()
        },
        chaos::Ledger {
            name: "bob".into(),
            ..Default::default()
        },
    ];
    for (i, item) in names.iter().enumerate() {
        let w = usize::from(i >= 3);
        let r = app.done(chaos::SLUG, &ledgers[w].name, item, 10).await;
        assert_eq!((r.status, r.body.trim()), (200, "OK"));
        ledgers[w].ok.push(item.clone());
    }
    // bob reports alice's first item again: told OK, not credited.
    let r = app.done(chaos::SLUG, "bob", &names[0], 10).await;
    assert_eq!((r.status, r.body.trim()), (200, "OK"));
    ledgers[1].ok.push(names[0].clone());
    let proof = |ledgers: &[chaos::Ledger]| {
        let store = app.store.clone();
        let ledgers = ledgers.to_vec();
        async move { chaos::verify::verify(&store, chaos::SLUG, 6, &ledgers, None).await }
    };
    let (verdict, problems) = proof(&ledgers).await;
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!((verdict.done, verdict.told_twice), (6, 1));

    let k = app.store.keys().project(chaos::SLUG);
    let client = app.store.client();
    // An item told OK, gone from the done set.
    let _: i64 = client.srem(k.done(), &names[5]).await.expect("srem");
    let (_, problems) = proof(&ledgers).await;
    assert!(
        problems
            .iter()
            .any(|p| p.contains("LOST") && p.contains(&names[5])),
        "{problems:#?}"
    );
    let _: i64 = client.sadd(k.done(), &names[5]).await.expect("sadd");
    // An item counted twice in a downloader's total.
    let _: f64 = client
        .zincrby(k.dl_items(), 1.0, "alice")
        .await
        .expect("zincrby");
    let (_, problems) = proof(&ledgers).await;
    assert!(
        problems.iter().any(|p| p.contains("counted twice")),
        "{problems:#?}"
    );
    let _: f64 = client
        .zincrby(k.dl_items(), -1.0, "alice")
        .await
        .expect("zincrby");
    // An item counted twice in the project's total, and bytes counted twice, per downloader,
    // per domain and in all: each seen, and each undone.
    for (key, field, says) in [
        (k.stats(), "done_items", "done_items is 7"),
        (k.stats(), "done_bytes", "done_bytes is"),
        (k.domain_bytes(), "data", "domain_bytes says"),
    ] {
        let _: i64 = client.hincrby(&key, field, 1).await.expect("hincrby");
        let (_, problems) = proof(&ledgers).await;
        assert!(
            problems.iter().any(|p| p.contains(says)),
            "{field}: {problems:#?}"
        );
        let _: i64 = client.hincrby(&key, field, -1).await.expect("hincrby");
    }
    let _: f64 = client
        .zincrby(k.dl_bytes(), 5.0, "bob")
        .await
        .expect("zincrby");
    let (_, problems) = proof(&ledgers).await;
    assert!(
        problems.iter().any(|p| p.contains("bob: dl:bytes says")),
        "{problems:#?}"
    );
    let _: f64 = client
        .zincrby(k.dl_bytes(), -5.0, "bob")
        .await
        .expect("zincrby");
    // Credit for an item its downloader was never told OK for.
    let mut unacknowledged = proof(&ledgers).await;
    assert!(unacknowledged.1.is_empty(), "{:#?}", unacknowledged.1);
    ledgers[0].ok.retain(|i| *i != names[1]);
    unacknowledged = proof(&ledgers).await;
    assert!(
        unacknowledged
            .1
            .iter()
            .any(|p| p.contains("never told OK for them") && p.contains(&names[1])),
        "{:#?}",
        unacknowledged.1
    );
}
