//! A local Redis Cluster for tests: `redis-server --cluster-enabled yes` on free ports in a
//! temporary directory, joined by `redis-cli --cluster create`; stopped and removed on drop.
//!
//! [`Cluster::shared`] is one cluster for the whole test binary (started by the first test that
//! asks, stopped when the binary exits); a test that kills nodes starts its own.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{mpsc, Mutex, OnceLock},
    time::{Duration, Instant},
};

/// How long a cluster may take to form (six processes on a loaded 2-core machine).
const READY_DEADLINE: Duration = Duration::from_secs(60);

/// One `redis-server` of a cluster.
struct Node {
    port: u16,
    child: Mutex<Option<Child>>,
}

/// A node as `CLUSTER NODES` shows it: its port, whether it is a master not failed, and its
/// slot ranges.
type NodeView = (u16, bool, Vec<(u16, u16)>);

/// A running local Redis Cluster.
pub struct Cluster {
    nodes: Vec<Node>,
    dir: PathBuf,
}

/// `redis-cli -p port args...`: its output, or `None` when it could not reach the node.
pub fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success() && !text.starts_with("Could not connect")).then_some(text)
}

/// Spawns `cmd` so that it is SIGKILLed when this test process ends, however it ends (statics
/// such as [`Cluster::shared`] are never dropped). Linux sends the signal when the *thread*
/// that spawned the child ends, so every child is spawned by one thread that lives as long as
/// the process.
fn spawn_tied(mut cmd: Command) -> std::io::Result<Child> {
    type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        });
        Mutex::new(tx)
    });
    // SAFETY: prctl is async-signal-safe and touches nothing of the parent's.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let (tx, rx) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, tx))
        .map_err(|_| std::io::Error::other("spawner thread gone"))?;
    rx.recv()
        .map_err(|_| std::io::Error::other("spawner thread gone"))?
}

/// A port `p` for a node, with `p + 10000` (its cluster bus) also free. Taken below Linux's
/// ephemeral range (32768 and up), so no outgoing connection takes it meanwhile.
fn node_port() -> u16 {
    loop {
        let p = 20_000 + rand::random::<u16>() % 2_700;
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        if free(p) && free(p + 10_000) {
            return p;
        }
    }
}

impl Cluster {
    /// Starts `masters` masters with `replicas` replicas each; a node that misses
    /// `node_timeout_ms` of pings is taken as failed (its replica promoted). Slots of a failed
    /// master without replica stop answering, the others go on
    /// (`cluster-require-full-coverage no`).
    pub fn start(masters: usize, replicas: usize, node_timeout_ms: u64) -> Cluster {
        let dir = std::env::temp_dir().join(crate::random_name("tracker-cluster-"));
        std::fs::create_dir_all(&dir).expect("create cluster dir");
        let mut cluster = Cluster {
            nodes: Vec::new(),
            dir,
        };
        for _ in 0..masters * (1 + replicas) {
            let node = cluster.start_node(node_timeout_ms);
            cluster.nodes.push(node);
        }
        let addrs: Vec<String> = cluster
            .ports()
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli must be installed");
        assert!(
            created.status.success(),
            "redis-cli --cluster create: {}",
            String::from_utf8_lossy(&created.stdout)
        );
        cluster.wait_ready(masters * (1 + replicas));
        cluster
    }

    /// The cluster every test of this binary shares (3 masters, 3 replicas, the default node
    /// timeout: no failover when the machine is busy); tests keep apart by key namespace.
    pub fn shared() -> &'static Cluster {
        static SHARED: OnceLock<Cluster> = OnceLock::new();
        extern "C" fn stop_shared() {
            if let Some(c) = SHARED.get() {
                c.stop();
            }
        }
        SHARED.get_or_init(|| {
            let cluster = Cluster::start(3, 1, 15_000);
            // SAFETY: registers a plain function, run once at exit.
            unsafe { libc::atexit(stop_shared) };
            cluster
        })
    }

    fn start_node(&self, node_timeout_ms: u64) -> Node {
        for _ in 0..20 {
            let port = node_port();
            let dir = self.dir.join(port.to_string());
            std::fs::create_dir_all(&dir).expect("node dir");
            let mut cmd = Command::new("redis-server");
            cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-config-file", "nodes.conf"])
                .args(["--cluster-node-timeout", &node_timeout_ms.to_string()])
                .args(["--cluster-require-full-coverage", "no"])
                .args(["--appendonly", "yes", "--save", "", "--daemonize", "no"])
                .args(server::embedded_redis::hash_listpack_args())
                .arg("--dir")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut child = spawn_tied(cmd).expect("redis-server must be installed");
            // Redis reports its directory resolved (as getcwd does).
            let real = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
            let end = Instant::now() + Duration::from_secs(10);
            loop {
                // Its own answer, not a node of another cluster that took the port first.
                let dir_of = cli(port, &["CONFIG", "GET", "dir"]).unwrap_or_default();
                let ours = dir_of.lines().nth(1).map(std::path::Path::new) == Some(real.as_path());
                if ours && matches!(child.try_wait(), Ok(None)) {
                    return Node {
                        port,
                        child: Mutex::new(Some(child)),
                    };
                }
                // Exited: the port was taken meanwhile; try another.
                if matches!(child.try_wait(), Ok(Some(_))) || Instant::now() > end {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("no redis-server cluster node would start");
    }

    /// Waits until every node sees `n` nodes and the cluster as ok, and every replica is in
    /// sync with its master.
    fn wait_ready(&self, n: usize) {
        let end = Instant::now() + READY_DEADLINE;
        let known = format!("cluster_known_nodes:{n}");
        for port in self.ports() {
            loop {
                let info = cli(port, &["CLUSTER", "INFO"]).unwrap_or_default();
                let repl = cli(port, &["INFO", "replication"]).unwrap_or_default();
                let synced = repl.contains("role:master") || repl.contains("master_link_status:up");
                if info.contains("cluster_state:ok") && info.contains(&known) && synced {
                    break;
                }
                assert!(
                    Instant::now() < end,
                    "cluster node {port} not ready: {info}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// The ports of its nodes.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// The process ids of its running nodes.
    pub fn pids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter_map(|n| {
                let child = n.child.lock().unwrap_or_else(|e| e.into_inner());
                child.as_ref().map(Child::id)
            })
            .collect()
    }

    /// Its URL for the tracker: `redis-cluster://` the first node, `?node=` the others.
    pub fn url(&self) -> String {
        let ports = self.ports();
        let others: Vec<String> = ports[1..]
            .iter()
            .map(|p| format!("node=127.0.0.1:{p}"))
            .collect();
        format!(
            "redis-cluster://127.0.0.1:{}?{}",
            ports[0],
            others.join("&")
        )
    }

    /// `CLUSTER NODES` as a live node sees it.
    fn view(&self) -> Vec<NodeView> {
        let text = self
            .ports()
            .into_iter()
            .filter(|p| self.is_running(*p))
            .find_map(|p| cli(p, &["CLUSTER", "NODES"]))
            .expect("a live cluster node");
        text.lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                let port = f.get(1)?.split(['@', ':']).nth(1)?.parse().ok()?;
                let flags = f.get(2)?;
                let master = flags.contains("master") && !flags.contains("fail");
                let ranges = f
                    .iter()
                    .skip(8)
                    .filter(|r| !r.starts_with('['))
                    .filter_map(|r| {
                        let (a, b) = r.split_once('-').unwrap_or((r, r));
                        Some((a.parse().ok()?, b.parse().ok()?))
                    })
                    .collect();
                Some((port, master, ranges))
            })
            .collect()
    }

    /// The port of the master serving `key`'s slot now, as the live nodes see it.
    pub fn master_of(&self, key: &str) -> Option<u16> {
        let slot = fred::util::redis_keyslot(key.as_bytes());
        self.view()
            .into_iter()
            .find(|(_, master, ranges)| {
                *master && ranges.iter().any(|&(a, b)| (a..=b).contains(&slot))
            })
            .map(|(port, ..)| port)
    }

    /// The masters serving slots now.
    pub fn masters(&self) -> Vec<u16> {
        let mut masters: Vec<u16> = self
            .view()
            .into_iter()
            .filter(|(_, master, ranges)| *master && !ranges.is_empty())
            .map(|(port, ..)| port)
            .collect();
        masters.sort();
        masters
    }

    /// One project slug per master (`{prefix}0`, `{prefix}1`, ... until each master has one),
    /// with the master serving it.
    pub fn slugs_on_every_master(&self, prefix: &str) -> Vec<(String, u16)> {
        let masters = self.masters();
        let mut found: Vec<(String, u16)> = Vec::new();
        for i in 0.. {
            let slug = format!("{prefix}{i}");
            let master = self.master_of(&format!("{{{slug}}}")).expect("a master");
            if !found.iter().any(|(_, m)| *m == master) {
                found.push((slug, master));
            }
            if found.len() == masters.len() {
                return found;
            }
        }
        unreachable!()
    }

    /// Whether the node on `port` runs (was not killed by the test).
    pub fn is_running(&self, port: u16) -> bool {
        self.nodes
            .iter()
            .find(|n| n.port == port)
            .is_some_and(|n| n.child.lock().unwrap_or_else(|e| e.into_inner()).is_some())
    }

    /// SIGKILLs the node on `port`.
    pub fn kill(&self, port: u16) {
        let node = self.nodes.iter().find(|n| n.port == port).expect("a node");
        if let Some(mut child) = node.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits until every replica of `master` has applied all of its writes (its replication
    /// offset, read from the replica itself, equals the master's).
    pub fn wait_replicated(&self, master: u16, deadline: Duration) {
        let end = Instant::now() + deadline;
        let field = |text: &str, name: &str| -> Option<u64> {
            text.lines()
                .find_map(|l| l.trim().strip_prefix(name))
                .and_then(|v| v.parse().ok())
        };
        loop {
            let info = cli(master, &["INFO", "replication"]).unwrap_or_default();
            // slaveN:ip=127.0.0.1,port=P,state=online,offset=N,lag=0
            let replicas: Vec<u16> = info
                .lines()
                .filter(|l| l.starts_with("slave") && l.contains("state=online"))
                .filter_map(|l| l.split("port=").nth(1)?.split(',').next()?.parse().ok())
                .collect();
            let offset = field(&info, "master_repl_offset:");
            let caught_up = !replicas.is_empty()
                && replicas.iter().all(|&r| {
                    let theirs = cli(r, &["INFO", "replication"]).unwrap_or_default();
                    offset.is_some() && field(&theirs, "slave_repl_offset:") == offset
                });
            if caught_up {
                return;
            }
            assert!(Instant::now() < end, "replicas of {master} behind: {info}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills every node and removes the directory.
    fn stop(&self) {
        for node in &self.nodes {
            if let Some(mut child) = node.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}
