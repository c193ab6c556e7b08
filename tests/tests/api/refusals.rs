//! Every refusal code a script returns, made by a real script on a real Redis and decoded as
//! its [`Refusal`] variant: through the store's wrappers where they pass it on, and by calling
//! the script itself where a wrapper answers for it (`no_project` as `None`, `not_claimed` as
//! `false`, `filter_changed` by reading the filter again).

use fred::prelude::*;
use server::{
    keys::Keys,
    store::{
        now_ms, scripts::Scripts, BackfeedRecord, ClaimOutcome, ClaimRequest, DoneOutcome,
        DoneReport, Pipeline, Refusal, StoreError,
    },
};
use std::sync::Arc;
use tests::TestApp;

const T0: u64 = 1_700_000_000_000;

fn who(name: &str) -> ClaimRequest {
    ClaimRequest {
        downloader: name.into(),
        version: "1".into(),
        n: 1,
        name_ok: true,
        ..Default::default()
    }
}

fn report(name: &str, item: &str, domain: &str, bytes: u64) -> DoneReport {
    DoneReport {
        downloader: name.into(),
        bytes: vec![(domain.into(), bytes)],
        items: vec![item.into()],
        ..Default::default()
    }
}

/// The refusal of one claim request by `request`.
async fn claim_refusal(app: &TestApp, request: &ClaimRequest, now: u64) -> Refusal {
    match app.store.queue().claim("p", request, now).await.unwrap() {
        ClaimOutcome::Refused(r) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// The refusal of one done report.
async fn done_refusal(app: &TestApp, report: &DoneReport) -> Refusal {
    match app.store.queue().done("p", report, T0).await.unwrap() {
        DoneOutcome::Refused(r) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Claims one item for `name`.
async fn claim_one(app: &TestApp, name: &str) -> String {
    match app.store.queue().claim("p", &who(name), T0).await.unwrap() {
        ClaimOutcome::Items(items, _) => items[0].clone(),
        other => panic!("claim: {other:?}"),
    }
}

#[tokio::test]
async fn claim_refusals() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c"]).await;

    app.settings("p", |s| s.min_version = "2".into()).await;
    assert_eq!(
        claim_refusal(&app, &who("alice"), T0).await,
        Refusal::OldVersion
    );
    app.settings("p", |s| s.min_version = String::new()).await;

    let bad = ClaimRequest {
        name_ok: false,
        ..who("alice")
    };
    assert_eq!(claim_refusal(&app, &bad, T0).await, Refusal::BadName);

    let blocked = ClaimRequest {
        globally_blocked: true,
        ..who("alice")
    };
    assert_eq!(claim_refusal(&app, &blocked, T0).await, Refusal::Blocked);

    app.settings("p", |s| s.state = "paused".into()).await;
    assert_eq!(
        claim_refusal(&app, &who("alice"), T0).await,
        Refusal::NotActive
    );
    app.settings("p", |s| s.state = "active".into()).await;

    app.settings("p", |s| s.dl_max_claims = 1).await;
    claim_one(&app, "alice").await;
    assert_eq!(
        claim_refusal(&app, &who("alice"), T0).await,
        Refusal::Budget
    );
    app.settings("p", |s| s.dl_max_claims = 0).await;

    app.settings("p", |s| {
        s.rate = 1.0;
        s.burst = 1.0;
    })
    .await;
    claim_one(&app, "bob").await;
    let Refusal::RateLimited { wait_ms } = claim_refusal(&app, &who("bob"), T0).await else {
        panic!("rate limited")
    };
    assert!(wait_ms > 0 && wait_ms <= 1000, "{wait_ms}");
    app.settings("p", |s| s.rate = 0.0).await;

    claim_one(&app, "carol").await;
    assert_eq!(
        claim_refusal(&app, &who("carol"), T0).await,
        Refusal::NothingToGive
    );
    // One batch answers each request with its own outcome.
    let batch = [bad, who("dave")];
    let outcomes = app
        .store
        .queue()
        .claim_batch("p", &batch, T0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcomes,
        [
            ClaimOutcome::Refused(Refusal::BadName),
            ClaimOutcome::Refused(Refusal::NothingToGive)
        ]
    );
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn done_refusals() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c"]).await;

    assert_eq!(
        done_refusal(&app, &report("alice", "", "data", 1)).await,
        Refusal::Invalid
    );
    assert_eq!(
        done_refusal(&app, &report("alice", "nope", "data", 1)).await,
        Refusal::UnknownItem {
            item: "nope".into()
        }
    );
    assert_eq!(
        done_refusal(&app, &report("alice", "a", "data", 1)).await,
        Refusal::NeverHandedOut { item: "a".into() }
    );

    let item = claim_one(&app, "alice").await;
    let stats = Keys::new(&app.namespace).project("p").stats();
    let _: () = app
        .store
        .client()
        .hset(&stats, ("done_bytes", (1u64 << 53) - 1))
        .await
        .unwrap();
    let before = app.counts("p").await;
    assert_eq!(
        done_refusal(&app, &report("alice", &item, "data", 1)).await,
        Refusal::Overflow
    );
    // Nothing changed: the byte total, the counts, the item still out.
    let untouched: Option<String> = app.store.client().hget(&stats, "done_bytes").await.unwrap();
    assert_eq!(untouched, Some(((1u64 << 53) - 1).to_string()));
    assert_eq!(app.counts("p").await, before);
    let _: () = app
        .store
        .client()
        .hset(&stats, ("done_bytes", 0))
        .await
        .unwrap();

    assert_eq!(
        done_refusal(&app, &report("alice", &item, "elsewhere", 1)).await,
        Refusal::DomainMismatch
    );
    // The mismatch released the item and blocked the (empty) IP.
    assert_eq!(app.counts("p").await.out, 0);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn release_refusals() {
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    assert!(!app
        .store
        .queue()
        .release("p", "a", "alice", "", false, now_ms())
        .await
        .unwrap());
    let item = claim_one(&app, "alice").await;
    let err = app
        .store
        .queue()
        .release("p", &item, "bob", "", false, now_ms())
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Refused(Refusal::NotClaimant)),
        "{err:?}"
    );

    // The script itself names the item that is not claimed, with the code a refusal has.
    let k = Keys::new(&app.namespace).project("p");
    let keys = k.release_keys("todo");
    let args = vec![
        Value::from(now_ms() as i64),
        Value::from("alice"),
        Value::from("0"),
        Value::from(""),
        Value::from(""),
        Value::from(k.prefix()),
        Value::from("zzz"),
    ];
    let scripts = Scripts::new();
    let reply = scripts
        .call::<serde_json::Value>(app.store.client(), &scripts.release, keys, args)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply["refused"][0]["item"], "zzz");
    let refusal: Refusal = serde_json::from_value(reply["refused"][0].clone()).unwrap();
    assert_eq!(refusal, Refusal::NotClaimed);
    app.assert_invariant("p").await;
}

/// A claim request of `name` made with pipeline `pipeline` carrying `tags`.
fn with_pipeline(name: &str, pipeline: &str, tags: &[&str]) -> ClaimRequest {
    ClaimRequest {
        pipeline: Some(Arc::new(Pipeline {
            name: pipeline.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            ..Pipeline::default()
        })),
        ..who(name)
    }
}

#[tokio::test]
async fn pipeline_refusals() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    app.settings("p", |s| s.require_token = true).await;
    assert_eq!(
        claim_refusal(&app, &who("alice"), T0).await,
        Refusal::TokenRequired
    );
    app.settings("p", |s| s.tags = vec!["east".into()]).await;
    let west = with_pipeline("alice", "w", &["west"]);
    assert_eq!(
        claim_refusal(&app, &west, T0).await,
        Refusal::NotForPipeline
    );
    let east = with_pipeline("alice", "e", &["east"]);
    let ClaimOutcome::Items(items, _) = app.store.queue().claim("p", &east, T0).await.unwrap()
    else {
        panic!("the east pipeline is served")
    };
    let item = items[0].clone();
    // Another pipeline, or none, reports or releases it: refused.
    for pipeline in ["w", ""] {
        let report = DoneReport {
            pipeline: pipeline.into(),
            ..report("alice", &item, "data", 1)
        };
        assert_eq!(
            done_refusal(&app, &report).await,
            Refusal::OtherPipeline { item: item.clone() }
        );
        let err = app
            .store
            .queue()
            .release_as("p", &item, "alice", "", false, pipeline, now_ms())
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Refused(Refusal::OtherPipeline { .. })),
            "{err:?}"
        );
    }
    assert_eq!(app.counts("p").await.out, 1);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn no_project_and_filter_changed() {
    let app = TestApp::start().await;
    let store = &app.store;
    let record = BackfeedRecord {
        hash: 1,
        part: String::new(),
        item: "x".into(),
    };
    // The wrappers answer `None` for a project that does not exist...
    assert_eq!(
        store
            .queue()
            .claim_batch("nope", &[who("a")], T0)
            .await
            .unwrap(),
        None
    );
    assert!(store
        .figures()
        .snapshot("nope", 0, 0)
        .await
        .unwrap()
        .is_none());
    assert_eq!(store.upkeep().recount("nope").await.unwrap(), None);
    assert_eq!(
        store
            .queue()
            .backfeed("nope", "todo:backfeed", true, 100, &[record], T0)
            .await
            .unwrap(),
        None
    );
    // ... which the script says with `no_project`.
    let k = Keys::new(&app.namespace).project("nope");
    let scripts = Scripts::new();
    let keys = k.recount_keys();
    let reply = scripts
        .call::<serde_json::Value>(
            store.client(),
            &scripts.recount,
            keys,
            vec![Value::from(k.prefix())],
        )
        .await
        .unwrap();
    assert_eq!(reply.unwrap_err(), Refusal::NoProject);

    // A tracker that read another number of filter layers than there are is told to read again.
    app.project("p", &[]).await;
    let k = Keys::new(&app.namespace).project("p");
    let keys = k.backfeed_keys();
    let args = |layers: i64, gen: &str| -> Vec<Value> {
        vec![
            Value::from(T0 as i64),
            Value::from(k.prefix()),
            Value::from("todo:backfeed"),
            Value::from("0"),
            Value::from("1000 64 7"),
            Value::from(layers),
            Value::from(0),
            Value::from(0),
            Value::from(gen),
        ]
    };
    let reply = scripts
        .call::<serde_json::Value>(
            store.client(),
            &scripts.backfeed,
            keys.clone(),
            args(5, "0"),
        )
        .await
        .unwrap();
    assert_eq!(reply.unwrap_err(), Refusal::FilterChanged);
    // Nor one that checked its records against segments on disk that have changed since.
    let reply = scripts
        .call::<serde_json::Value>(store.client(), &scripts.backfeed, keys, args(0, "7"))
        .await
        .unwrap();
    assert_eq!(reply.unwrap_err(), Refusal::FilterChanged);
    let layers: Option<String> = store.client().hget(k.bloom(), "layers").await.unwrap();
    assert_eq!(layers, None, "refused before any write");
}

#[tokio::test]
async fn rate_limited_logins_and_rescues() {
    let app = TestApp::start().await;
    let store = &app.store;
    assert_eq!(
        store
            .people()
            .login_attempt("root", "192.0.2.1", (1, 10), 60)
            .await
            .unwrap(),
        None
    );
    let wait = store
        .people()
        .login_attempt("root", "192.0.2.1", (1, 10), 60)
        .await
        .unwrap();
    assert!(wait.is_some_and(|s| (1..=60).contains(&s)), "{wait:?}");
    // The script's refusal, in whole seconds as ms.
    let scripts = Scripts::new();
    let keys = Keys::new(&app.namespace);
    let reply = scripts
        .call::<serde_json::Value>(
            store.client(),
            &scripts.login_attempt,
            vec![
                keys.admin_login_pair("root", "192.0.2.1"),
                keys.admin_login_net("192.0.2.1"),
            ],
            vec![Value::from(1), Value::from(10), Value::from(60)],
        )
        .await
        .unwrap();
    let Err(Refusal::RateLimited { wait_ms }) = reply else {
        panic!("{reply:?}")
    };
    assert!(
        wait_ms % 1000 == 0 && (1000..=60_000).contains(&wait_ms),
        "{wait_ms}"
    );

    let now = now_ms();
    assert_eq!(
        store
            .projects()
            .rescue_attempt("192.0.2.2", 1, now)
            .await
            .unwrap(),
        None
    );
    let wait = store
        .projects()
        .rescue_attempt("192.0.2.2", 1, now)
        .await
        .unwrap();
    assert!(wait.is_some_and(|s| (1..=60).contains(&s)), "{wait:?}");
    let reply = scripts
        .call::<serde_json::Value>(
            store.client(),
            &scripts.rescue_attempt,
            vec![keys.rescue_limiter("192.0.2.2")],
            vec![Value::from(now as i64), Value::from(1)],
        )
        .await
        .unwrap();
    let Err(Refusal::RateLimited { wait_ms }) = reply else {
        panic!("{reply:?}")
    };
    assert!((1..=60_000).contains(&wait_ms), "{wait_ms}");
}
