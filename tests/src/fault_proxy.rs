//! A fault-injecting proxy in front of a real Redis, for tests of what a failing Redis call
//! leaves behind. Clients connect to [`FaultProxy::url`]; every command they send (a RESP
//! array) is counted, passed on, and its answers passed back, but the one a [`Fault`] is set
//! for: that call fails (its connection closes and the command never reaches Redis), times out
//! and runs later (held past the client's timeout, then passed on, its answer dropped), or
//! runs and its answer is lost (passed on, its connection closed before the answer). Commands a
//! connection sends to set itself up (`HELLO`, `CLIENT`, `PING`, `SELECT`, `AUTH`, `INFO`) are
//! passed on and not counted.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream, UnixStream},
};

/// What happens to the call a fault is set for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The connection closes before the command reaches Redis: it never runs.
    Fail,
    /// The command is held for the given time (past the client's timeout), then runs; its
    /// answer is dropped.
    Late(Duration),
    /// The command runs; its connection closes before the answer.
    Lost,
    /// The command waits until [`FaultProxy::release`], then runs and is answered: a test
    /// changes Redis between two calls of one operation (see [`FaultProxy::held`]).
    Held,
}

impl Fault {
    /// Each way a call can go wrong, with a letter for it: it fails (`f`), runs late (`l`,
    /// held 50 ms), or runs and its answer is lost (`x`).
    pub const EACH: [(&'static str, Fault); 3] = [
        ("f", Fault::Fail),
        ("l", Fault::Late(Duration::from_millis(50))),
        ("x", Fault::Lost),
    ];
}

/// A proxy in front of `app`'s own Redis (a private one: [`crate::TestApp::start_private`]),
/// and a store of `app`'s namespace that talks to Redis through it (`pool` connections, 2 s
/// timeouts).
pub async fn behind_proxy(app: &crate::TestApp, pool: usize) -> (FaultProxy, server::store::Store) {
    let proxy = FaultProxy::start(&app.redis_url).await;
    let store = server::store::Store::connect_with(
        &proxy.url,
        &app.namespace,
        pool,
        Duration::from_secs(2),
        app.dir.join("offload"),
    )
    .await
    .expect("a store through the proxy")
    .with_storage(app.store.storage().clone());
    (proxy, store)
}

#[derive(Default)]
struct Plan {
    /// Counted commands so far.
    seen: usize,
    /// Their names, in order.
    names: Vec<String>,
    /// The (1-based) number of the counted command to fault, and how.
    fault: Option<(usize, Fault)>,
}

/// The proxy: a TCP address in front of a Redis unix socket.
pub struct FaultProxy {
    /// `redis://127.0.0.1:PORT`.
    pub url: String,
    plan: Arc<Mutex<Plan>>,
    /// Late commands not yet run.
    late: Arc<std::sync::atomic::AtomicUsize>,
    gate: Arc<Gate>,
    task: tokio::task::JoinHandle<()>,
}

/// Where a [`Fault::Held`] command waits: `arrived` once it came, `release` to pass it on.
#[derive(Default)]
struct Gate {
    arrived: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Commands a connection sends to set itself up: passed on, not counted.
const SETUP: [&str; 6] = ["HELLO", "CLIENT", "PING", "SELECT", "AUTH", "INFO"];

impl FaultProxy {
    /// A proxy in front of the Redis at `redis_url` (`redis+unix://PATH`, as the tests start it).
    pub async fn start(redis_url: &str) -> FaultProxy {
        let socket = PathBuf::from(
            redis_url
                .strip_prefix("redis+unix://")
                .expect("a Redis on a unix socket"),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("redis://{}", listener.local_addr().expect("address"));
        let plan = Arc::new(Mutex::new(Plan::default()));
        let late = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let gate = Arc::new(Gate::default());
        let (shared, pending, gates) = (plan.clone(), late.clone(), gate.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (socket, plan, late) = (socket.clone(), shared.clone(), pending.clone());
                let gate = gates.clone();
                tokio::spawn(async move {
                    if let Ok(upstream) = UnixStream::connect(&socket).await {
                        relay(client, upstream, socket, plan, late, gate).await;
                    }
                });
            }
        });
        FaultProxy {
            url,
            plan,
            late,
            gate,
            task,
        }
    }

    /// Sets `fault` for the `at`-th counted command from now (1: the next), counting afresh.
    pub fn fault_at(&self, at: usize, fault: Fault) {
        let mut plan = self.plan.lock().unwrap();
        plan.seen = 0;
        plan.names.clear();
        plan.fault = Some((at, fault));
    }

    /// No fault from now; counts afresh.
    pub fn clear(&self) {
        let mut plan = self.plan.lock().unwrap();
        plan.seen = 0;
        plan.names.clear();
        plan.fault = None;
    }

    /// Waits until the command a [`Fault::Held`] is set for has come (and is held), or
    /// `deadline` passes (a panic: it never came).
    pub async fn held(&self, deadline: Duration) {
        tokio::time::timeout(deadline, self.gate.arrived.notified())
            .await
            .unwrap_or_else(|_| panic!("no command held within {deadline:?}: {:?}", self.seen()));
    }

    /// Passes the held command on (see [`Fault::Held`]).
    pub fn release(&self) {
        self.gate.release.notify_one();
    }

    /// Whether every late command has run (and been answered).
    pub fn idle(&self) -> bool {
        self.late.load(std::sync::atomic::Ordering::SeqCst) == 0
    }

    /// The names of the commands counted since the last [`FaultProxy::fault_at`] or
    /// [`FaultProxy::clear`] (an `FCALL`'s with its function: `FCALL offload_commit_…`).
    pub fn seen(&self) -> Vec<String> {
        self.plan.lock().unwrap().names.clone()
    }
}

/// Reads one RESP command (an array of bulk strings) from `buf` at its start: its length in
/// bytes and its first two words, or `None` while incomplete.
fn parse_command(buf: &[u8]) -> Option<(usize, Vec<String>)> {
    fn line(buf: &[u8], at: usize) -> Option<(usize, &[u8])> {
        let end = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((end + 2, &buf[at..end]))
    }
    let (mut at, head) = line(buf, 0)?;
    let head = std::str::from_utf8(head).ok()?;
    let Some(n) = head.strip_prefix('*') else {
        // An inline command: one line.
        let words = head.split_whitespace().take(2).map(String::from).collect();
        return Some((at, words));
    };
    let n: usize = n.parse().ok()?;
    let mut words = Vec::new();
    for _ in 0..n {
        let (next, len) = line(buf, at)?;
        let len: usize = std::str::from_utf8(len)
            .ok()?
            .strip_prefix('$')?
            .parse()
            .ok()?;
        if buf.len() < next + len + 2 {
            return None;
        }
        if words.len() < 2 {
            words.push(String::from_utf8_lossy(&buf[next..next + len]).into_owned());
        }
        at = next + len + 2;
    }
    Some((at, words))
}

/// Passes commands from `client` to `upstream` and answers back, applying the plan.
async fn relay(
    mut client: TcpStream,
    upstream: UnixStream,
    socket: PathBuf,
    plan: Arc<Mutex<Plan>>,
    late: Arc<std::sync::atomic::AtomicUsize>,
    gate: Arc<Gate>,
) {
    let _ = client.set_nodelay(true);
    // Set once a call's answer must not reach the client.
    let mute = std::sync::atomic::AtomicBool::new(false);
    let muted = || mute.load(std::sync::atomic::Ordering::SeqCst);
    let (mut from_client, mut to_client) = client.split();
    let (mut from_redis, mut to_redis) = upstream.into_split();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let answers = async {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match from_redis.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if muted() || to_client.write_all(&chunk[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    let commands = async {
        loop {
            match from_client.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            while let Some((len, words)) = parse_command(&buf) {
                let command: Vec<u8> = buf.drain(..len).collect();
                let name = words.first().map(|w| w.to_uppercase()).unwrap_or_default();
                let fault = if SETUP.contains(&name.as_str()) {
                    None
                } else {
                    let mut plan = plan.lock().unwrap();
                    plan.seen += 1;
                    let label = match (name.as_str(), words.get(1)) {
                        ("FCALL" | "FCALL_RO" | "EVALSHA", Some(f)) => format!("{name} {f}"),
                        _ => name.clone(),
                    };
                    plan.names.push(label);
                    match plan.fault {
                        Some((at, f)) if at == plan.seen => Some(f),
                        _ => None,
                    }
                };
                match fault {
                    None => {
                        if to_redis.write_all(&command).await.is_err() {
                            return;
                        }
                    }
                    Some(Fault::Held) => {
                        gate.arrived.notify_one();
                        gate.release.notified().await;
                        if to_redis.write_all(&command).await.is_err() {
                            return;
                        }
                    }
                    Some(Fault::Fail) => return,
                    Some(Fault::Lost) => {
                        // Redis runs it and answers; the answer goes nowhere.
                        mute.store(true, std::sync::atomic::Ordering::SeqCst);
                        let _ = to_redis.write_all(&command).await;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        return;
                    }
                    Some(Fault::Late(after)) => {
                        // The client's connection goes now (it sees no answer); the command
                        // reaches Redis later, on a connection of its own.
                        let socket = socket.clone();
                        let late = late.clone();
                        late.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::spawn(async move {
                            tokio::time::sleep(after).await;
                            if let Ok(mut late) = UnixStream::connect(&socket).await {
                                let _ = late.write_all(&command).await;
                                let mut sink = [0u8; 1024];
                                let _ = tokio::time::timeout(
                                    Duration::from_secs(5),
                                    late.read(&mut sink),
                                )
                                .await;
                            }
                            late.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        });
                        return;
                    }
                }
            }
        }
    };
    // Whichever side ends first ends the connection (the answers of a faulted call are never
    // passed back: the commands side returns before they come).
    tokio::select! {
        _ = answers => {}
        _ = commands => {}
    }
}
