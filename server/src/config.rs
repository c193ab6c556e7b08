//! Settings of the process: environment variables, overridable by command-line flags.

use clap::builder::BoolishValueParser;
use std::{net::SocketAddr, path::PathBuf};

/// Where to find Redis and how to name keys.
#[derive(clap::Args, Clone, Debug)]
pub struct RedisArgs {
    /// Redis URL (`redis://host:port`, `redis+unix:///path`). Unset: a private redis-server is
    /// started with its data and socket under the data directory.
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,
    /// Prefix of every Redis key, so several installs can share one Redis.
    #[arg(long, env = "TRACKER_NAMESPACE", default_value = "t")]
    pub namespace: String,
    /// Directory of the private Redis (data, append-only file, socket).
    #[arg(long, env = "TRACKER_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Memory cap of the private Redis, in Redis's syntax (`512mb`, `2gb`; `0`: none); past it,
    /// writes are refused (503) until memory frees. Default: a quarter of the machine's memory,
    /// at least 64 MB. Ignored with `REDIS_URL` (set `maxmemory` on that server yourself).
    #[arg(long, env = "TRACKER_REDIS_MAXMEMORY", value_parser = parse_memory)]
    pub redis_maxmemory: Option<u64>,
    /// When the private Redis forces its append-only file to disk (`appendfsync`): `always`,
    /// before it answers a write (a machine crash loses no acknowledged write), or `everysec`,
    /// once a second (a machine crash can lose the last second or two of writes; `always` cut
    /// the pairs benchmark by 37-54 %). Default: `everysec` for a server started here; one
    /// found running keeps its setting unless this is given. Ignored with `REDIS_URL` (set
    /// `appendfsync` on that server yourself). docs/operators.md, "Durability".
    #[arg(long, env = "TRACKER_FSYNC", value_enum)]
    pub fsync: Option<Fsync>,
    /// Directory of segment files, the items offloaded from Redis (default: `offload` under the
    /// data directory). Every tracker process of an install, and the command line, needs it on
    /// storage they all share.
    #[arg(long, env = "TRACKER_OFFLOAD_DIR")]
    pub offload_dir: Option<PathBuf>,
    /// Where segment files live instead: `file://DIR` (the same as `TRACKER_OFFLOAD_DIR`) or
    /// an object store, `s3://BUCKET/PREFIX`, configured by the `AWS_*` variables (endpoint,
    /// region, keys, `AWS_ALLOW_HTTP`): then no process needs a shared directory.
    /// docs/operators.md, "Several machines".
    #[arg(long, env = "TRACKER_STORAGE")]
    pub storage: Option<String>,
}

impl RedisArgs {
    /// The offload directory: as set, or `offload` under the data directory.
    pub fn offload_dir(&self) -> PathBuf {
        self.offload_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("offload"))
    }
}

/// When the private Redis forces its append-only file to disk: its `appendfsync`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    /// After every write, before answering it.
    Always,
    /// Once a second, in the background.
    Everysec,
}

impl Fsync {
    /// The setting of a private Redis started without `TRACKER_FSYNC`, chosen by measurement:
    /// `always` would have been the default had it cost the pairs benchmark at most 20 %; it
    /// cost 37-54 % in three runs, median 43 % (bench/README.md, "appendfsync always or
    /// everysec").
    pub const DEFAULT: Fsync = Fsync::Everysec;

    /// Its name in Redis's configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::Everysec => "everysec",
        }
    }
}

/// Settings of `tracker serve`.
#[derive(clap::Parser, Clone, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "TRACKER_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Directory of the built site (`pkg/` with the wasm, js and css). Default: `../site` next to
    /// the binary (where `make build` puts it), else `target/site`.
    #[arg(long, env = "TRACKER_SITE_ROOT")]
    pub site_root: Option<PathBuf>,
    /// Take client IPs from `X-Forwarded-For` (set when behind a reverse proxy).
    #[arg(long, env = "TRACKER_TRUST_PROXY", value_parser = BoolishValueParser::new())]
    pub trust_proxy: bool,
    /// API token for admin calls by scripts (`Authorization: Bearer TOKEN`): releasing any
    /// item, item history.
    #[arg(long, env = "TRACKER_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Serve `/metrics` to everyone (without it, only to an admin or an account's API token).
    #[arg(long, env = "TRACKER_METRICS_PUBLIC", value_parser = BoolishValueParser::new())]
    pub metrics_public: bool,
    /// Mark the admin session cookie `Secure` (set when the panel is served over HTTPS; on
    /// anyway when the public URL is https://).
    #[arg(long, env = "TRACKER_SECURE_COOKIES", value_parser = BoolishValueParser::new())]
    pub secure_cookies: bool,
    /// The public base URL printed in the first-run setup link (default: http://LISTEN).
    #[arg(long, env = "TRACKER_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Directory of completion log archives (default: `archive` under the data directory).
    #[arg(long, env = "TRACKER_ARCHIVE_DIR")]
    pub archive_dir: Option<PathBuf>,
    /// Script calls in flight per project for claims, and for dones (1-16): the next batch
    /// gathers while they run; fewer make bigger batches (bench/README.md).
    #[arg(long, env = "TRACKER_BATCH_WORKERS", default_value_t = DEFAULT_BATCH_WORKERS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=16))]
    pub batch_workers: usize,
    /// Seconds without a call after which a downloader of the warrior API counts as gone: the
    /// admin Fleet page drops it and the pages stop counting it among the warriors at work.
    #[arg(long, env = "TRACKER_FLEET_SILENCE", default_value_t = DEFAULT_FLEET_SILENCE_MS / 1000,
          value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..=86_400))]
    pub fleet_silence: u64,
    /// Seconds between two reads of how Redis is set (`INFO`): a server that evicts keys, or
    /// is older than 7, is logged as an error and shown by `/healthz` (docs/limits-and-security.md, "Redis").
    #[arg(long, env = "TRACKER_REDIS_CHECK", default_value_t = DEFAULT_REDIS_CHECK,
          value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..=3_600))]
    pub redis_check: u64,
    /// What clients may send and hold (docs/limits-and-security.md).
    #[command(flatten)]
    pub limits: crate::limits::Limits,
}

impl ServeArgs {
    /// Whether the session cookie is `Secure`: asked for, or implied by an `https://` public URL
    /// (a browser would not send a `Secure` cookie over plain HTTP, so it is not forced otherwise).
    pub fn secure_cookies(&self) -> bool {
        self.secure_cookies
            || self
                .public_url
                .as_deref()
                .is_some_and(|u| u.trim().to_ascii_lowercase().starts_with("https://"))
    }

    /// The archive directory: as set, or `archive` under `data_dir`.
    pub fn archive_dir(&self, data_dir: &std::path::Path) -> PathBuf {
        self.archive_dir
            .clone()
            .unwrap_or_else(|| data_dir.join("archive"))
    }

    /// The site root to serve `/pkg` from.
    pub fn site_root(&self) -> PathBuf {
        if let Some(root) = &self.site_root {
            return root.clone();
        }
        std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.join("site")))
            .filter(|p| p.join("pkg").is_dir())
            .unwrap_or_else(|| PathBuf::from("target/site"))
    }
}

/// Everything the server process is built from ([`crate::start`]): what `tracker serve` reads
/// from the environment and its flags ([`Config::from_args`]), and what the tests set directly
/// ([`Config::new`], then the fields they need). Nothing is changed once the process is built.
#[derive(Clone, Debug)]
pub struct Config {
    /// The Redis to use: a URL as `REDIS_URL` takes it (the private Redis's once it runs).
    pub redis_url: String,
    /// Prefix of every Redis key.
    pub namespace: String,
    /// Address to listen on (port 0: any free port, see [`crate::Running::addr`]).
    pub listen: SocketAddr,
    /// Directory of the built site (`pkg/`).
    pub site_root: PathBuf,
    /// Take client IPs from `X-Forwarded-For`.
    pub trust_proxy: bool,
    /// The API token of scripts acting as a global admin.
    pub admin_token: Option<String>,
    /// Whether `/metrics` is open to everyone.
    pub metrics_public: bool,
    /// Mark the admin session cookie `Secure`.
    pub secure_cookies: bool,
    /// Base of the one-time setup link printed while no account exists (default: `http://`
    /// and the address listened on).
    pub public_url: Option<String>,
    /// Where completion log archives are written (a directory per project).
    pub archive_dir: PathBuf,
    /// Where segment files (items offloaded from Redis) are written, a directory per project.
    pub offload_dir: PathBuf,
    /// Where they are written instead (`TRACKER_STORAGE`: `file://` or `s3://` URL).
    pub storage: Option<String>,
    /// Whether this process runs the offloader (the tests start theirs by hand).
    pub offloader: bool,
    /// Script calls in flight per project for claims, and for dones.
    pub batch_workers: usize,
    /// How long a downloader of the warrior API may be silent before it is forgotten.
    pub fleet_silence: std::time::Duration,
    /// How often how Redis is set is read again (`TRACKER_REDIS_CHECK`).
    pub redis_check: std::time::Duration,
    /// What clients may send and hold.
    pub limits: crate::limits::Limits,
}

impl Config {
    /// The address this tracker is reached at, for links it hands out: `--public-url`, else the
    /// request's `Host` when it is a plain host name (with a port), else the listening address.
    pub fn base_url(&self, headers: &axum::http::HeaderMap) -> String {
        if let Some(url) = &self.public_url {
            return url.trim_end_matches('/').to_string();
        }
        let host = headers
            .get(axum::http::header::HOST)
            .and_then(|v| v.to_str().ok())
            .filter(|h| {
                !h.is_empty()
                    && h.len() <= 255
                    && h.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
            });
        match host {
            Some(h) => format!("http://{h}"),
            None => format!("http://{}", self.listen),
        }
    }

    /// The defaults of `tracker serve` (as docs/operators.md documents them) for the Redis at
    /// `redis_url` and the key prefix `namespace`; reads no environment.
    pub fn new(redis_url: impl Into<String>, namespace: impl Into<String>) -> Self {
        let listen: SocketAddr = DEFAULT_LISTEN.parse().expect("a socket address");
        Self {
            redis_url: redis_url.into(),
            namespace: namespace.into(),
            listen,
            site_root: PathBuf::from("target/site"),
            trust_proxy: false,
            admin_token: None,
            metrics_public: false,
            secure_cookies: false,
            public_url: None,
            archive_dir: PathBuf::from("data/archive"),
            offload_dir: PathBuf::from("data/offload"),
            storage: None,
            offloader: true,
            batch_workers: DEFAULT_BATCH_WORKERS,
            fleet_silence: std::time::Duration::from_millis(DEFAULT_FLEET_SILENCE_MS),
            redis_check: std::time::Duration::from_secs(DEFAULT_REDIS_CHECK),
            limits: Default::default(),
        }
    }

    /// The settings of `tracker serve` run with `redis` and `serve` (the environment and
    /// flags) against the Redis at `redis_url`.
    pub fn from_args(redis_url: impl Into<String>, redis: &RedisArgs, serve: &ServeArgs) -> Self {
        Self {
            redis_url: redis_url.into(),
            namespace: redis.namespace.clone(),
            listen: serve.listen,
            site_root: serve.site_root(),
            trust_proxy: serve.trust_proxy,
            admin_token: serve.admin_token.clone(),
            metrics_public: serve.metrics_public,
            secure_cookies: serve.secure_cookies(),
            public_url: serve.public_url.clone(),
            archive_dir: serve.archive_dir(&redis.data_dir),
            offload_dir: redis.offload_dir(),
            storage: redis.storage.clone(),
            offloader: true,
            batch_workers: serve.batch_workers,
            fleet_silence: std::time::Duration::from_secs(serve.fleet_silence),
            redis_check: std::time::Duration::from_secs(serve.redis_check),
            limits: serve.limits.clone(),
        }
    }

    /// The one-time link that creates the first account with setup `token`, for a server
    /// listening on `addr`.
    pub fn setup_link(&self, addr: SocketAddr, token: &str) -> String {
        let base = (self.public_url.clone()).unwrap_or_else(|| format!("http://{addr}"));
        format!("{}/admin/setup?token={token}", base.trim_end_matches('/'))
    }
}

/// Why the offload directory cannot be used beside `others` (name, path): the offloader deletes
/// what no registry names under it, so no other directory of the tracker may be it or lie inside
/// it, and it may not lie inside the archive directory (whose project folders it would share).
/// Relative paths are compared from the working directory, symbolic links resolved where the
/// path exists.
pub fn offload_dir_conflict(
    offload: &std::path::Path,
    others: &[(&str, &std::path::Path)],
) -> Option<String> {
    let real = |p: &std::path::Path| -> PathBuf {
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        // The longest existing ancestor, resolved; the rest appended as written.
        // `..` and `.` taken out as written (a path that does not exist yet cannot be
        // resolved); then the longest existing ancestor resolved (symbolic links).
        let mut plain = PathBuf::new();
        for part in abs.components() {
            match part {
                std::path::Component::ParentDir => {
                    plain.pop();
                }
                std::path::Component::CurDir => {}
                other => plain.push(other),
            }
        }
        let mut head = plain.clone();
        let mut tail = Vec::new();
        loop {
            if let Ok(c) = head.canonicalize() {
                let mut out = c;
                for part in tail.iter().rev() {
                    out.push(part);
                }
                return out;
            }
            match (head.file_name().map(|f| f.to_owned()), head.parent()) {
                (Some(name), Some(parent)) => {
                    tail.push(name);
                    head = parent.to_path_buf();
                }
                _ => return plain,
            }
        }
    };
    let off = real(offload);
    for (name, other) in others {
        let o = real(other);
        if o == off || o.starts_with(&off) {
            return Some(format!(
                "the offload directory {} holds the {name} directory {}: the offloader deletes unregistered files under it; set TRACKER_OFFLOAD_DIR to a directory of its own",
                offload.display(),
                other.display()
            ));
        }
        if *name == "archive" && off.starts_with(&o) {
            return Some(format!(
                "the offload directory {} lies inside the archive directory {}; set TRACKER_OFFLOAD_DIR to a directory of its own",
                offload.display(),
                other.display()
            ));
        }
    }
    None
}

/// Where `tracker serve` listens unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// Script calls in flight per lane of the batcher unless configured (`TRACKER_BATCH_WORKERS`):
/// one runs while the next batch gathers. A light batch waits for the running call instead of
/// going beside it (`batcher::HOLD_BELOW`, for at most `batcher::HOLD_MAX`), so the second call
/// in flight serves heavy batches and slow calls only (bench/README.md, "A light batch waits for
/// the running call").
pub const DEFAULT_BATCH_WORKERS: usize = 2;

/// The fleet silence unless set (`TRACKER_FLEET_SILENCE`): 15 minutes, as Warrior HQ's
/// instances.
pub const DEFAULT_FLEET_SILENCE_MS: u64 = 15 * 60 * 1000;

/// Seconds between two reads of how Redis is set unless configured (`TRACKER_REDIS_CHECK`).
pub const DEFAULT_REDIS_CHECK: u64 = 60;

/// Parses a size the way Redis's configuration does: bytes, or a number with a unit `k`, `m`,
/// `g` (powers of 1000) or `kb`, `mb`, `gb` (powers of 1024), in any case: `512mb`, `2gb`.
pub fn parse_memory(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let digits = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (number, unit) = lower.split_at(digits);
    let scale: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1 << 10,
        "m" => 1000 * 1000,
        "mb" => 1 << 20,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1 << 30,
        _ => return Err(format!("{text:?}: use bytes or a unit: 512mb, 2gb")),
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("{text:?}: use a whole number of bytes or a unit: 512mb, 2gb"))
}

#[cfg(test)]
mod tests;
