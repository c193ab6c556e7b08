//! Coalesces concurrent claims (and concurrent dones) of one project into single script calls.
//!
//! Each project has a lane per operation: requests queue on a channel, and a few workers each
//! take everything queued (up to [`MAX_BATCH`]) and run it as one script call. Under light load
//! a batch is one request and nothing waits; under heavy load batches grow, and Redis runs one
//! script per batch instead of one per request.
//!
//! A small batch waits while another call of its lane runs (up to [`HOLD_BELOW`] items): what
//! arrives meanwhile joins it, so under a steady load of single-item calls the lane sends fewer,
//! larger calls. A batch at or above that weight goes at once, beside the running call, so Redis
//! does not wait while the tracker encodes a large batch. It waits at most [`HOLD_MAX`]: a slow
//! call (Redis stalled, a connection lost, a done that reads segment files on disk) does not hold
//! the calls behind it any longer than that, and two run side by side again, as without the hold.
//!
//! A request whose caller has gone (its HTTP client hung up, so its handler was dropped) before
//! its batch runs is left out of the batch; a claim that ran for a caller gone meanwhile gives its
//! items back to the queue at once rather than leaving them claimed until they are reclaimed.
//!
//! The warrior handlers wait for a lane at most the Redis deadline (`api::within_deadline`): a
//! claim they gave up on that runs later is handed back like any claim whose caller has gone; a
//! done that runs later counts, and the warrior's retry of it is a duplicate.

use crate::store::{
    now_ms, ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport, Store, StoreError, StoreResult,
};
use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, Mutex},
};
use tokio::sync::{mpsc, oneshot};

/// Who the timeline names for items given back from a claim whose caller left.
pub const ABANDONED: &str = "caller-gone";

/// The most requests one script call serves.
pub const MAX_BATCH: usize = 128;

/// A batch of fewer items than this (claimed, or reported done) waits while another call of its
/// lane runs; a heavier one goes beside it.
pub const HOLD_BELOW: usize = 16;

/// The longest a light batch waits for the running call; past it, it goes beside that call.
pub const HOLD_MAX: std::time::Duration = std::time::Duration::from_millis(5);

type Job<Req, Res> = (Req, oneshot::Sender<StoreResult<Res>>);
type Lanes<Req, Res> = Mutex<HashMap<String, mpsc::Sender<Job<Req, Res>>>>;

/// The lanes of every project; cheap to clone.
#[derive(Clone)]
pub struct Batcher {
    store: Store,
    workers: usize,
    /// This process's script call figures, for `/metrics`.
    pub metrics: Arc<crate::script_metrics::ScriptMetrics>,
    claims: Arc<Lanes<ClaimRequest, ClaimOutcome>>,
    dones: Arc<Lanes<DoneReport, DoneOutcome>>,
}

impl Batcher {
    /// Lanes over `store`, each with `workers` script calls in flight (at least 1).
    pub fn new(store: Store, workers: usize) -> Self {
        Self {
            store,
            workers: workers.max(1),
            metrics: Arc::default(),
            claims: Arc::default(),
            dones: Arc::default(),
        }
    }

    /// Serves one claim request, batched with concurrent ones.
    pub async fn claim(&self, slug: &str, request: ClaimRequest) -> StoreResult<ClaimOutcome> {
        let (store, metrics) = (self.store.clone(), self.metrics.clone());
        let run = move |slug: String, reqs: Vec<ClaimRequest>| {
            let (store, metrics) = (store.clone(), metrics.clone());
            async move {
                metrics.record("claim", reqs.len());
                match store.queue().claim_batch(&slug, &reqs, now_ms()).await {
                    Ok(Some(outcomes)) => outcomes.into_iter().map(Ok).collect(),
                    Ok(None) => reqs.iter().map(|_| Err(StoreError::NoProject)).collect(),
                    Err(e) => failed(&e, reqs.len()),
                }
            }
        };
        let store = self.store.clone();
        // Items claimed for a caller that has gone go back to their queue, first in line.
        let give_back = move |slug: String, outcome: ClaimOutcome| {
            let store = store.clone();
            async move {
                let ClaimOutcome::Items(items, _) = outcome else {
                    return;
                };
                let admin = crate::store::Releaser {
                    who: ABANDONED,
                    ip: "",
                    admin: true,
                    pipeline: "",
                };
                if let Err(e) = store
                    .queue()
                    .release_items_as(&slug, &items, &admin, now_ms())
                    .await
                {
                    tracing::warn!(error = %e, %slug, items = items.len(), "could not give back an abandoned claim; its items will be reclaimed");
                }
                tracing::debug!(%slug, items = items.len(), "gave back the items of a claim whose caller left");
            }
        };
        let weigh = |r: &ClaimRequest| r.n;
        let lane = lane(
            &self.claims,
            slug,
            self.workers,
            (weigh, HOLD_MAX),
            run,
            give_back,
        );
        submit(lane, request).await
    }

    /// Records one done report, batched with concurrent ones.
    pub async fn done(&self, slug: &str, report: DoneReport) -> StoreResult<DoneOutcome> {
        let (store, metrics) = (self.store.clone(), self.metrics.clone());
        let run = move |slug: String, reports: Vec<DoneReport>| {
            let (store, metrics) = (store.clone(), metrics.clone());
            async move {
                metrics.record("done", reports.len());
                match store.queue().done_batch(&slug, &reports, now_ms()).await {
                    Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
                    Err(e) => failed(&e, reports.len()),
                }
            }
        };
        // A done that ran is kept: the work was done, whoever hung up.
        let hold: Hold<DoneReport> = (|r| r.items.len(), HOLD_MAX);
        let lane = lane(&self.dones, slug, self.workers, hold, run, |_, _| async {});
        submit(lane, report).await
    }
}

/// The error of each request of a batch whose script call failed: a full or unavailable Redis
/// stays [`StoreError::Full`] or [`StoreError::Unavailable`] (answered 503, retry later),
/// anything else is logged once for the batch.
fn failed<T>(e: &StoreError, n: usize) -> Vec<StoreResult<T>> {
    if !matches!(e, StoreError::Full | StoreError::Unavailable(_)) {
        tracing::error!(error = %e, "batched script call failed");
    }
    (0..n)
        .map(|_| match e {
            StoreError::Full => Err(StoreError::Full),
            StoreError::Unavailable(why) => Err(StoreError::Unavailable(why.clone())),
            e => Err(StoreError::Reply {
                script: "batch",
                detail: e.to_string(),
            }),
        })
        .collect()
}

async fn submit<Req, Res>(lane: mpsc::Sender<Job<Req, Res>>, req: Req) -> StoreResult<Res> {
    let (tx, rx) = oneshot::channel();
    let closed = || StoreError::Reply {
        script: "batch",
        detail: "batcher stopped".into(),
    };
    lane.send((req, tx)).await.map_err(|_| closed())?;
    rx.await.map_err(|_| closed())?
}

/// What one call of a lane needs to know of the others: how many run, and when one ends.
#[derive(Default)]
struct InFlight {
    calls: std::sync::atomic::AtomicUsize,
    ended: tokio::sync::Notify,
}

/// One call of a lane counted in [`InFlight`] while it lives; its end wakes a held batch.
struct Call(Arc<InFlight>);

impl Call {
    fn start(flight: &Arc<InFlight>) -> Self {
        flight
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Self(flight.clone())
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.0
            .calls
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        self.0.ended.notify_waiters();
    }
}

/// Takes into `jobs` what `rx` holds now, up to [`MAX_BATCH`].
fn drain<T>(rx: &mut mpsc::Receiver<T>, jobs: &mut Vec<T>) {
    while jobs.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(job) => jobs.push(job),
            Err(_) => break,
        }
    }
}

/// How a lane holds a light batch: what a request weighs (items it claims or reports), and the
/// longest it waits for the running call.
type Hold<Req> = (fn(&Req) -> usize, std::time::Duration);

/// Gathers the next batch of a lane: waits for a first job (None when the lane is closed), takes
/// what is queued with it, and while another call runs and the batch weighs less than
/// [`HOLD_BELOW`], keeps taking what arrives until that call ends, for at most `hold`'s limit.
async fn gather<Req, Res>(
    rx: &mut mpsc::Receiver<Job<Req, Res>>,
    flight: &InFlight,
    (weigh, hold_max): Hold<Req>,
) -> Option<Vec<Job<Req, Res>>> {
    use std::sync::atomic::Ordering;
    let mut jobs = vec![rx.recv().await?];
    drain(rx, &mut jobs);
    // The timer starts only when a batch is held: a heavy batch, or one with no call running,
    // goes without reading the clock.
    let mut limit = None;
    loop {
        let weight: usize = jobs.iter().map(|(req, _)| weigh(req)).sum();
        if weight >= HOLD_BELOW || jobs.len() >= MAX_BATCH {
            break;
        }
        // Registered before the count is read, so that a call ending in between still wakes us.
        let ended = flight.ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        if flight.calls.load(Ordering::Acquire) == 0 {
            break;
        }
        let limit = limit.get_or_insert_with(|| Box::pin(tokio::time::sleep(hold_max)));
        tokio::select! {
            job = rx.recv() => match job {
                Some(job) => {
                    jobs.push(job);
                    drain(rx, &mut jobs);
                }
                None => break,
            },
            () = &mut ended => break,
            () = limit.as_mut() => break,
        }
    }
    Some(jobs)
}

/// The lane of `slug`, started on first use with `run` as its batch executor; `hold` says how a
/// light batch waits for a running call (see [`gather`]).
fn lane<Req, Res, F, Fut, A, AFut>(
    lanes: &Lanes<Req, Res>,
    slug: &str,
    workers: usize,
    hold: Hold<Req>,
    run: F,
    abandoned: A,
) -> mpsc::Sender<Job<Req, Res>>
where
    A: Fn(String, Res) -> AFut + Clone + Send + Sync + 'static,
    AFut: Future<Output = ()> + Send,
    Req: Send + 'static,
    Res: Send + 'static,
    F: Fn(String, Vec<Req>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Vec<StoreResult<Res>>> + Send,
{
    let mut lanes = lanes.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(tx) = lanes.get(slug) {
        return tx.clone();
    }
    let (tx, rx) = mpsc::channel::<Job<Req, Res>>(MAX_BATCH * 8);
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let flight = Arc::new(InFlight::default());
    for _ in 0..workers {
        let (rx, run, abandoned, slug, flight) = (
            rx.clone(),
            run.clone(),
            abandoned.clone(),
            slug.to_string(),
            flight.clone(),
        );
        tokio::spawn(async move {
            loop {
                let (mut jobs, call) = {
                    let mut rx = rx.lock().await;
                    let Some(jobs) = gather(&mut rx, &flight, hold).await else {
                        return;
                    };
                    // Counted before the next worker may gather, so that it holds its batch.
                    (jobs, Call::start(&flight))
                };
                // Callers gone before their batch runs are left out.
                jobs.retain(|(_, reply)| !reply.is_closed());
                let (reqs, replies): (Vec<Req>, Vec<_>) = jobs.into_iter().unzip();
                let results = if reqs.is_empty() {
                    Vec::new()
                } else {
                    run(slug.clone(), reqs).await
                };
                drop(call);
                for (reply, result) in replies.into_iter().zip(results) {
                    if let Err(Ok(unwanted)) = reply.send(result) {
                        abandoned(slug.clone(), unwanted).await;
                    }
                }
            }
        });
    }
    lanes.insert(slug.to_string(), tx.clone());
    tx
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn callers_gone_before_their_batch_are_left_out_and_results_for_gone_callers_handed_back()
    {
        let lanes: Lanes<u32, u32> = Mutex::default();
        let ran = Arc::new(Mutex::new(Vec::new()));
        let (go_tx, go_rx) = tokio::sync::watch::channel(false);
        let abandoned = Arc::new(AtomicUsize::new(0));
        let run = {
            let ran = ran.clone();
            move |_: String, reqs: Vec<u32>| {
                let (ran, mut go) = (ran.clone(), go_rx.clone());
                async move {
                    ran.lock().unwrap().extend(reqs.iter().copied());
                    let _ = go.wait_for(|&g| g).await;
                    reqs.into_iter().map(Ok).collect()
                }
            }
        };
        let gave_back = {
            let abandoned = abandoned.clone();
            move |_: String, result: u32| {
                abandoned.fetch_add(result as usize, Ordering::SeqCst);
                async {}
            }
        };
        // Two in flight, so that the second batch runs while the first waits on `go`.
        // Each request weighs a full batch, so that none is held.
        let tx = lane(&lanes, "s", 2, (|_| HOLD_BELOW, HOLD_MAX), run, gave_back);
        // A caller that has gone before its batch runs.
        let (reply, gone) = oneshot::channel();
        drop(gone);
        tx.send((1, reply)).await.unwrap();
        // A caller that goes while its batch runs.
        let (reply, leaving) = oneshot::channel();
        tx.send((10, reply)).await.unwrap();
        // A caller that stays.
        let (reply, staying) = oneshot::channel();
        tx.send((100, reply)).await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while ran.lock().unwrap().len() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the batch never ran: {:?}",
                ran.lock().unwrap()
            );
            tokio::task::yield_now().await;
        }
        drop(leaving);
        go_tx.send(true).unwrap();
        assert_eq!(staying.await.unwrap().unwrap(), 100);
        let mut ran = ran.lock().unwrap().clone();
        ran.sort_unstable();
        assert_eq!(ran, [10, 100], "the gone caller's request never ran");
        while abandoned.load(Ordering::SeqCst) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the gone caller's result was never handed back"
            );
            tokio::task::yield_now().await;
        }
        assert_eq!(abandoned.load(Ordering::SeqCst), 10);
    }

    /// The batches a test lane's calls saw, in order.
    type Batches = Arc<Mutex<Vec<Vec<u32>>>>;

    /// Runs a lane whose calls record their batches and wait on `go`; returns the lane and the
    /// batches seen so far.
    fn recording_lane(
        lanes: &Lanes<u32, u32>,
        hold: Hold<u32>,
        go: tokio::sync::watch::Receiver<bool>,
    ) -> (mpsc::Sender<Job<u32, u32>>, Batches) {
        let batches = Arc::new(Mutex::new(Vec::new()));
        let run = {
            let batches = batches.clone();
            move |_: String, reqs: Vec<u32>| {
                let (batches, mut go) = (batches.clone(), go.clone());
                async move {
                    batches.lock().unwrap().push(reqs.clone());
                    let _ = go.wait_for(|&g| g).await;
                    reqs.into_iter().map(Ok).collect()
                }
            }
        };
        let tx = lane(lanes, "s", 2, hold, run, |_: String, _: u32| async {});
        (tx, batches)
    }

    async fn send(tx: &mpsc::Sender<Job<u32, u32>>, n: u32) -> oneshot::Receiver<StoreResult<u32>> {
        let (reply, answer) = oneshot::channel();
        tx.send((n, reply)).await.unwrap();
        answer
    }

    async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !cond() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_light_batch_waits_for_the_running_call_and_goes_as_one_call_a_heavy_one_goes_beside_it(
    ) {
        // Light: one item each. The first call runs (and waits on `go`); the three sent while it
        // runs are held, then go as one call when it ends.
        let lanes: Lanes<u32, u32> = Mutex::default();
        let (go_tx, go_rx) = tokio::sync::watch::channel(false);
        // No limit that this test could reach: the hold ends with the running call.
        let forever = Duration::from_secs(3600);
        let (tx, batches) = recording_lane(&lanes, (|_| 1, forever), go_rx);
        let first = send(&tx, 1).await;
        wait_until("the first call never ran", || {
            batches.lock().unwrap().len() == 1
        })
        .await;
        // Between the sends, time for a second worker to run what waits beside the first call,
        // were it not held.
        let idle = || async {
            for _ in 0..1000 {
                tokio::task::yield_now().await;
            }
        };
        let two = send(&tx, 2).await;
        idle().await;
        let later = [two, send(&tx, 3).await, send(&tx, 4).await];
        idle().await;
        assert_eq!(
            batches.lock().unwrap().len(),
            1,
            "a light batch ran beside a running call"
        );
        go_tx.send(true).unwrap();
        assert_eq!(first.await.unwrap().unwrap(), 1);
        for (answer, n) in later.into_iter().zip(2..) {
            assert_eq!(answer.await.unwrap().unwrap(), n);
        }
        assert_eq!(*batches.lock().unwrap(), [vec![1], vec![2, 3, 4]]);

        // Heavy: each request weighs a full batch, so the second runs while the first waits.
        goes_beside_a_running_call((|_| HOLD_BELOW, forever), "a heavy batch was held").await;
    }

    /// Sends a request while a first call runs and does not end: the second must run beside it,
    /// as a batch of its own (`why`: what failed, if it does not).
    async fn goes_beside_a_running_call(hold: Hold<u32>, why: &str) {
        let lanes: Lanes<u32, u32> = Mutex::default();
        let (go_tx, go_rx) = tokio::sync::watch::channel(false);
        let (tx, batches) = recording_lane(&lanes, hold, go_rx);
        let first = send(&tx, 1).await;
        wait_until("the first call never ran", || {
            batches.lock().unwrap().len() == 1
        })
        .await;
        let second = send(&tx, 2).await;
        wait_until(why, || batches.lock().unwrap().len() == 2).await;
        assert_eq!(*batches.lock().unwrap(), [vec![1], vec![2]]);
        go_tx.send(true).unwrap();
        assert_eq!(first.await.unwrap().unwrap(), 1);
        assert_eq!(second.await.unwrap().unwrap(), 2);
    }

    #[tokio::test]
    async fn a_light_batch_held_past_its_limit_goes_beside_a_call_that_does_not_end() {
        // The first call never ends while the test looks (it waits on `go`); the held request
        // goes after the hold's limit, beside it.
        let hold: Hold<u32> = (|_| 1, Duration::from_millis(1));
        goes_beside_a_running_call(hold, "a held batch waited past its limit").await;
    }
}
