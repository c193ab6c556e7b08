//! Coalesces concurrent claims (and concurrent dones) of one project into single script calls.
//!
//! Each project has a lane per operation: requests queue on a channel, and a few workers each
//! take everything queued (up to [`MAX_BATCH`]) and run it as one script call. Under light load
//! a batch is one request and nothing waits; under heavy load batches grow, and Redis runs one
//! script per batch instead of one per request.
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
                match store.claim_batch(&slug, &reqs, now_ms()).await {
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
                let ClaimOutcome::Items(items) = outcome else {
                    return;
                };
                for item in &items {
                    if let Err(e) = store
                        .release(&slug, item, ABANDONED, "", true, now_ms())
                        .await
                    {
                        tracing::warn!(error = %e, %slug, item, "could not give back an abandoned claim; it will be reclaimed");
                    }
                }
                tracing::debug!(%slug, items = items.len(), "gave back the items of a claim whose caller left");
            }
        };
        let lane = lane(&self.claims, slug, self.workers, run, give_back);
        submit(lane, request).await
    }

    /// Records one done report, batched with concurrent ones.
    pub async fn done(&self, slug: &str, report: DoneReport) -> StoreResult<DoneOutcome> {
        let (store, metrics) = (self.store.clone(), self.metrics.clone());
        let run = move |slug: String, reports: Vec<DoneReport>| {
            let (store, metrics) = (store.clone(), metrics.clone());
            async move {
                metrics.record("done", reports.len());
                match store.done_batch(&slug, &reports, now_ms()).await {
                    Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
                    Err(e) => failed(&e, reports.len()),
                }
            }
        };
        // A done that ran is kept: the work was done, whoever hung up.
        let lane = lane(&self.dones, slug, self.workers, run, |_, _| async {});
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

/// The lane of `slug`, started on first use with `run` as its batch executor.
fn lane<Req, Res, F, Fut, A, AFut>(
    lanes: &Lanes<Req, Res>,
    slug: &str,
    workers: usize,
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
    for _ in 0..workers {
        let (rx, run, abandoned, slug) =
            (rx.clone(), run.clone(), abandoned.clone(), slug.to_string());
        tokio::spawn(async move {
            loop {
                let mut jobs = Vec::new();
                {
                    let mut rx = rx.lock().await;
                    let Some(first) = rx.recv().await else { return };
                    jobs.push(first);
                    while jobs.len() < MAX_BATCH {
                        match rx.try_recv() {
                            Ok(job) => jobs.push(job),
                            Err(_) => break,
                        }
                    }
                }
                // Callers gone before their batch runs are left out.
                jobs.retain(|(_, reply)| !reply.is_closed());
                if jobs.is_empty() {
                    continue;
                }
                let (reqs, replies): (Vec<Req>, Vec<_>) = jobs.into_iter().unzip();
                let results = run(slug.clone(), reqs).await;
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
        let tx = lane(&lanes, "s", 2, run, gave_back);
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
}
