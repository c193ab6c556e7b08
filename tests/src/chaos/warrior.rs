//! The simulated warriors of the chaos run: each claims (one item, or `multi=N`) through a
//! process picked at random and reports its items done, retrying like seesaw until it is told
//! `OK`; a few drop items or hold them past their reclaim. Each keeps a ledger of what it was
//! told `OK` for, which the proof compares with what the tracker counted.

mod calls;

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

/// What the warriors are doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Faults on; paced; the droppers and late reporters misbehave.
    Chaos = 0,
    /// No faults; unpaced; everyone honest.
    Drain = 1,
    /// Done: leave after the current call.
    Stop = 2,
    /// Out of time: leave now, even with a report unacknowledged.
    Abort = 3,
}

/// What a warrior was told: the items of its done reports answered `OK` (a retried or late
/// report's items again, if it was told `OK` again), and which of them it reported late.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    /// The downloader name.
    pub name: String,
    /// Items of done reports answered `OK`.
    pub ok: Vec<String>,
    /// Items it held past their reclaim and reported late (also in `ok`).
    pub late: Vec<String>,
}

/// The warriors' counters, in the order they are printed.
const COUNTERS: [&str; 8] = [
    "claims answered 200",
    "items handed out",
    "done reports OK",
    "items reported OK",
    "items dropped",
    "items held",
    "late reports",
    "late reports after a reclaim",
];
const CLAIMS: usize = 0;
const HANDED: usize = 1;
const REPORTS: usize = 2;
const REPORTED: usize = 3;
const DROPPED: usize = 4;
const HELD: usize = 5;
const LATE: usize = 6;
const LATE_RECLAIMED: usize = 7;

/// Most items a late reporter holds at once.
const MAX_HELD: usize = 5;
/// The longest a retry waits, whatever `Retry-After` says: a warrior elsewhere would wait
/// longer, but this run wants load back as soon as the tracker is.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// State shared by every warrior.
pub(super) struct Shared {
    http: reqwest::Client,
    bases: Vec<String>,
    multi: usize,
    reclaim_ttl: Duration,
    phase: AtomicU8,
    /// The next free slot of the pacer, and the time it books per item.
    next_slot: Mutex<Instant>,
    per_item: Duration,
    /// Warriors holding items not acknowledged yet, and held late items.
    busy: AtomicUsize,
    counters: [AtomicU64; COUNTERS.len()],
    errors: Mutex<BTreeMap<String, u64>>,
    problems: Mutex<Vec<String>>,
    last_progress: Mutex<(Instant, u64)>,
}

impl Shared {
    /// Warriors of `bases`, paced at `rate` items a second during the chaos.
    pub(super) fn new(bases: Vec<String>, multi: usize, reclaim_ttl: u64, rate: f64) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(2))
            .pool_max_idle_per_host(512)
            .build()
            .expect("an HTTP client");
        Shared {
            http,
            bases,
            multi,
            reclaim_ttl: Duration::from_secs(reclaim_ttl),
            phase: AtomicU8::new(Phase::Chaos as u8),
            next_slot: Mutex::new(Instant::now()),
            per_item: Duration::from_secs_f64(1.0 / rate.max(1e-3)),
            busy: AtomicUsize::new(0),
            counters: Default::default(),
            errors: Mutex::default(),
            problems: Mutex::default(),
            last_progress: Mutex::new((Instant::now(), 0)),
        }
    }

    pub(super) fn phase(&self) -> Phase {
        match self.phase.load(Ordering::SeqCst) {
            0 => Phase::Chaos,
            1 => Phase::Drain,
            2 => Phase::Stop,
            _ => Phase::Abort,
        }
    }

    pub(super) fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::SeqCst);
    }

    /// Warriors with items claimed and not acknowledged yet, plus items held late.
    pub(super) fn busy(&self) -> usize {
        self.busy.load(Ordering::SeqCst)
    }

    fn count(&self, counter: usize, n: u64) {
        self.counters[counter].fetch_add(n, Ordering::Relaxed);
    }

    /// The counters by name.
    pub(super) fn counters(&self) -> BTreeMap<&'static str, u64> {
        COUNTERS
            .iter()
            .zip(&self.counters)
            .map(|(name, c)| (*name, c.load(Ordering::Relaxed)))
            .collect()
    }

    fn error(&self, kind: String) {
        *self
            .errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kind)
            .or_default() += 1;
    }

    /// Replies other than 200, and transport errors, by kind.
    pub(super) fn errors(&self) -> BTreeMap<String, u64> {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn problem(&self, what: String) {
        let mut p = self.problems.lock().unwrap_or_else(|e| e.into_inner());
        if p.len() < 1000 {
            p.push(what);
        }
    }

    /// What the warriors saw that the tracker must never answer.
    pub(super) fn problems(&self) -> Vec<String> {
        self.problems
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// One line: items acknowledged, and their rate since the last line.
    pub(super) fn progress(&self) -> String {
        let ok = self.counters[REPORTED].load(Ordering::Relaxed);
        let mut last = self.last_progress.lock().unwrap_or_else(|e| e.into_inner());
        let rate = (ok - last.1) as f64 / last.0.elapsed().as_secs_f64().max(1e-3);
        *last = (Instant::now(), ok);
        let errors: u64 = self.errors().values().sum();
        format!("{ok} items reported OK ({rate:.0}/s), {errors} errors")
    }

    /// Waits for the pacer's slot for `n` items (a backlog of up to 2 s is caught up).
    async fn pace(&self, n: usize) {
        let at = {
            let mut next = self.next_slot.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            let at = (*next).max(now.checked_sub(Duration::from_secs(2)).unwrap_or(now));
            *next = at + self.per_item * n as u32;
            at
        };
        tokio::time::sleep_until(at.into()).await;
    }
}

/// How a warrior behaves during the chaos: 5 % drop items, 5 % report some late.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Habit {
    Honest,
    Drops,
    Late,
}

fn habit(i: usize) -> Habit {
    match i % 40 {
        2 | 23 => Habit::Drops,
        12 | 33 => Habit::Late,
        _ => Habit::Honest,
    }
}

/// Holds `item` past its reclaim (until someone else has it, it is done, or 3 x the TTL),
/// then reports it.
async fn hold(
    shared: Arc<Shared>,
    who: String,
    item: String,
    ledger: Arc<Mutex<Ledger>>,
    held: Arc<AtomicUsize>,
) {
    let since = Instant::now();
    let mut reclaimed = false;
    while shared.phase() != Phase::Abort {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if since.elapsed() < shared.reclaim_ttl {
            continue;
        }
        if shared.still_mine(&item, &who).await == Some(false) {
            reclaimed = true;
            break;
        }
        if since.elapsed() > shared.reclaim_ttl * 3 {
            break;
        }
    }
    let items = [item];
    if shared.phase() != Phase::Abort && shared.done(&who, &items).await {
        let [item] = items;
        shared.count(LATE, 1);
        if reclaimed {
            shared.count(LATE_RECLAIMED, 1);
        }
        let mut l = ledger.lock().unwrap_or_else(|e| e.into_inner());
        l.ok.push(item.clone());
        l.late.push(item);
    }
    held.fetch_sub(1, Ordering::SeqCst);
    shared.busy.fetch_sub(1, Ordering::SeqCst);
}

/// Warrior `i`: works until the run stops; its ledger.
pub(super) async fn work(shared: Arc<Shared>, i: usize) -> Ledger {
    let who = format!("warrior-{i:03}");
    let n = if i % 2 == 1 { shared.multi } else { 1 };
    let habit = habit(i);
    let mut rng = StdRng::seed_from_u64(i as u64);
    let ledger = Arc::new(Mutex::new(Ledger {
        name: who.clone(),
        ..Ledger::default()
    }));
    let held = Arc::new(AtomicUsize::new(0));
    let mut holders = Vec::new();
    loop {
        let phase = shared.phase();
        if matches!(phase, Phase::Stop | Phase::Abort) {
            break;
        }
        if phase == Phase::Chaos {
            shared.pace(n).await;
        }
        let items = shared.claim(&who, n).await;
        if items.is_empty() {
            continue;
        }
        // Busy until told OK: the drain waits for that (an item claimed here is `out` until
        // then, or done with the reply lost and the report being retried).
        shared.busy.fetch_add(1, Ordering::SeqCst);
        let mut report = Vec::with_capacity(items.len());
        let misbehave = phase == Phase::Chaos;
        for item in items {
            if misbehave && habit == Habit::Drops && rng.random_bool(0.2) {
                shared.count(DROPPED, 1);
            } else if misbehave
                && habit == Habit::Late
                && held.load(Ordering::SeqCst) < MAX_HELD
                && rng.random_bool(0.2)
            {
                shared.count(HELD, 1);
                held.fetch_add(1, Ordering::SeqCst);
                shared.busy.fetch_add(1, Ordering::SeqCst);
                holders.push(tokio::spawn(hold(
                    shared.clone(),
                    who.clone(),
                    item,
                    ledger.clone(),
                    held.clone(),
                )));
            } else {
                report.push(item);
            }
        }
        if !report.is_empty() && shared.done(&who, &report).await {
            ledger
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .ok
                .extend(report);
        }
        shared.busy.fetch_sub(1, Ordering::SeqCst);
    }
    for h in holders {
        let _ = h.await;
    }
    let mine = std::mem::take(&mut *ledger.lock().unwrap_or_else(|e| e.into_inner()));
    mine
}
