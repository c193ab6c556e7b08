//! The queue engine against a model: random sequences of adds, claims (with time passing, so
//! claims go stale and are reclaimed), dones (some repeated), releases, offload rounds, offload
//! rounds killed at each step, and Redis rolled back to an earlier snapshot (a failover or a
//! restore that lost writes: the model goes back with it, the files on disk do not), run
//! through the store on a real Redis, each step checked against a plain reference model of
//! where each item is. After every step: each item in exactly one state (`tracker check`),
//! the counts the leaderboard shows equal the model's, and every item counted done once.
//! `PROPTEST_CASES` sets how many sequences (default 12 here, 40 steps each); a long run:
//! `PROPTEST_CASES=500 cargo test -p tests --test api model::`.

use proptest::{prelude::*, test_runner::TestRunner};
use server::store::{DoneOutcome, DoneReport};
use std::collections::{BTreeMap, BTreeSet};
use tests::TestApp;

const T0: u64 = 1_700_000_000_000;
/// The project's reclaim time (s): a claim is stale after it times its claim count.
const TTL_S: u64 = 60;
const DOWNLOADERS: [&str; 3] = ["ann", "bob", "cy"];

#[derive(Clone, Debug)]
enum Op {
    Add(usize),
    Claim {
        who: usize,
        n: usize,
        later: bool,
    },
    Done {
        who: usize,
        take: usize,
    },
    DoneAgain {
        pick: usize,
    },
    Release {
        who: usize,
        pick: usize,
    },
    Offload,
    /// An offload round killed after reading, after writing its file, or after registering it.
    OffloadKilled(usize),
    /// Keeps a copy of Redis's keys of the project (and the model) to roll back to.
    Snapshot,
    /// Redis goes back to the last snapshot.
    RollBack,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (1usize..30).prop_map(Op::Add),
        5 => (0usize..3, 1usize..6, proptest::bool::weighted(0.2))
            .prop_map(|(who, n, later)| Op::Claim { who, n, later }),
        4 => (0usize..3, 1usize..6).prop_map(|(who, take)| Op::Done { who, take }),
        1 => any::<usize>().prop_map(|pick| Op::DoneAgain { pick }),
        1 => (0usize..3, any::<usize>()).prop_map(|(who, pick)| Op::Release { who, pick }),
        1 => Just(Op::Offload),
        1 => (0usize..3).prop_map(Op::OffloadKilled),
        1 => Just(Op::Snapshot),
        1 => Just(Op::RollBack),
    ]
}

/// Where each item is, as the model has it.
#[derive(Clone, Default)]
struct Model {
    todo: BTreeSet<String>,
    /// Item -> (downloader, claim time ms, claims so far).
    claimed: BTreeMap<String, (usize, u64, u64)>,
    /// Item -> claims it had, while waiting.
    attempts: BTreeMap<String, u64>,
    done: BTreeSet<String>,
    added: usize,
    now: u64,
    slug: String,
    /// The last snapshot: Redis's keys of the project, and the model then.
    snapshot: Option<(tests::Snapshot, Box<Model>)>,
}

impl Model {
    fn held_by(&self, who: usize) -> Vec<String> {
        self.claimed
            .iter()
            .filter(|(_, (w, _, _))| *w == who)
            .map(|(i, _)| i.clone())
            .collect()
    }
}

async fn step(app: &TestApp, m: &mut Model, op: &Op) -> Result<(), TestCaseError> {
    let store = &app.store;
    let slug = m.slug.clone();
    let slug = slug.as_str();
    match *op {
        Op::Add(n) => {
            let items: Vec<String> = (m.added..m.added + n).map(|i| format!("m{i:05}")).collect();
            m.added += n;
            let added = store.queue().add_items(slug, "todo", &items).await.unwrap();
            prop_assert_eq!(added, n as u64);
            m.todo.extend(items);
        }
        Op::Claim { who, n, later } => {
            if later {
                // Past any claim's reclaim time (TTL times its claims, a few at most here).
                m.now += TTL_S * 1000 * 20;
            }
            m.now += 1;
            let got = app.claim_items(slug, DOWNLOADERS[who], n, m.now).await;
            prop_assert!(got.len() <= n);
            for item in got {
                let claims = if m.todo.remove(&item) {
                    m.attempts.remove(&item).unwrap_or(0) + 1
                } else if let Some((_, at, claims)) = m.claimed.get(&item).copied() {
                    // A reclaim: only of a claim past its time.
                    prop_assert!(
                        m.now >= at + TTL_S * 1000 * claims,
                        "{} reclaimed early",
                        item
                    );
                    claims + 1
                } else {
                    return Err(TestCaseError::fail(format!(
                        "{item} handed out from nowhere"
                    )));
                };
                m.claimed.insert(item, (who, m.now, claims));
            }
        }
        Op::Done { who, take } => {
            let held: Vec<String> = m.held_by(who).into_iter().take(take).collect();
            if held.is_empty() {
                return Ok(());
            }
            m.now += 1;
            let report = DoneReport {
                downloader: DOWNLOADERS[who].into(),
                version: "1".into(),
                ip: "192.0.2.1".into(),
                id: "null".into(),
                bytes: vec![("data".into(), 10)],
                items: held.clone(),
                ..Default::default()
            };
            let out = store.queue().done(slug, &report, m.now).await.unwrap();
            prop_assert_eq!(
                out,
                DoneOutcome::Recorded {
                    counted: held.len() as u64,
                    duplicates: 0
                }
            );
            for item in held {
                m.claimed.remove(&item);
                m.done.insert(item);
            }
        }
        Op::DoneAgain { pick } => {
            let Some(item) = m.done.iter().nth(pick % m.done.len().max(1)).cloned() else {
                return Ok(());
            };
            m.now += 1;
            let report = DoneReport {
                downloader: "ann".into(),
                version: "1".into(),
                ip: "192.0.2.1".into(),
                id: "null".into(),
                bytes: vec![("data".into(), 10)],
                items: vec![item],
                ..Default::default()
            };
            let out = store.queue().done(slug, &report, m.now).await.unwrap();
            prop_assert_eq!(
                out,
                DoneOutcome::Recorded {
                    counted: 0,
                    duplicates: 1
                },
                "a repeated done counts nothing"
            );
        }
        Op::Release { who, pick } => {
            let held = m.held_by(who);
            let Some(item) = held.get(pick % held.len().max(1)).cloned() else {
                return Ok(());
            };
            m.now += 1;
            let released = store
                .queue()
                .release(slug, &item, DOWNLOADERS[who], "127.0.0.1", true, m.now)
                .await
                .unwrap();
            prop_assert!(released, "{} released", item);
            let (_, _, claims) = m.claimed.remove(&item).unwrap();
            m.attempts.insert(item.clone(), claims);
            m.todo.insert(item);
        }
        Op::Offload => {
            let offloader = server::store::offload::offloader::Offloader::new(
                store.clone(),
                app.dir.join("archive"),
            );
            let _ = offloader.tick(slug, false).await.unwrap();
            offloader.release(slug).await.unwrap();
        }
        Op::OffloadKilled(at) => {
            use server::store::offload::offloader::StopAfter;
            let stop = [StopAfter::Read, StopAfter::Written, StopAfter::Registered][at];
            let offloader = server::store::offload::offloader::Offloader::new(
                store.clone(),
                app.dir.join("archive"),
            );
            if offloader.lease(slug).await.unwrap() {
                let settings = store.projects().project(slug).await.unwrap().unwrap();
                offloader.offload_done(slug, &settings, stop).await.unwrap();
                // Killed: its lease is given up (as its expiry would, later).
                offloader.release(slug).await.unwrap();
            }
        }
        Op::Snapshot => {
            let keys = app.dump_project(slug).await;
            let mut then = m.clone();
            then.snapshot = None;
            m.snapshot = Some((keys, Box::new(then)));
        }
        Op::RollBack => {
            if let Some((keys, then)) = m.snapshot.clone() {
                app.roll_back(slug, &keys).await;
                let now = m.now;
                *m = (*then).clone();
                // Time does not go back; the snapshot may be rolled back to again.
                m.now = now;
                m.snapshot = Some((keys, then));
            }
        }
    }
    Ok(())
}

async fn check(app: &TestApp, m: &Model) -> Result<(), TestCaseError> {
    let problems = app.store.upkeep().check(&m.slug).await.unwrap();
    prop_assert!(problems.is_empty(), "invariant: {:?}", problems);
    let c = app.counts(&m.slug).await;
    prop_assert_eq!(c.todo, m.todo.len() as u64, "todo");
    prop_assert_eq!(c.out, m.claimed.len() as u64, "claimed");
    prop_assert_eq!(c.done, m.done.len() as u64, "done");
    prop_assert_eq!(c.failed, 0, "failed");
    Ok(())
}

#[test]
fn the_queue_engine_agrees_with_a_reference_model() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let config = proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..Default::default()
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let app = rt.block_on(TestApp::start());
    let mut runner = TestRunner::new(config);
    let case = std::cell::Cell::new(0u64);
    runner
        .run(&proptest::collection::vec(op(), 1..40), |ops| {
            case.set(case.get() + 1);
            rt.block_on(async {
                let slug = format!("m{}", case.get());
                let slug = slug.as_str();
                app.project(slug, &[]).await;
                let mut s = (*app.store.projects().project(slug).await.unwrap().unwrap()).clone();
                s.reclaim_ttl = TTL_S;
                s.max_attempts = 0;
                // Small segments, so that offload rounds move done items to disk (below the
                // panel's bound of 1,000, which the store does not need).
                s.done_policy = "offload".into();
                s.offload_keep = 3;
                s.segment_items = 5;
                app.store.projects().save_settings(slug, &s).await.unwrap();
                let mut m = Model {
                    now: T0,
                    slug: slug.to_string(),
                    ..Default::default()
                };
                for op in &ops {
                    step(&app, &mut m, op).await?;
                    check(&app, &m).await?;
                }
                Ok(())
            })
        })
        .unwrap();
}
