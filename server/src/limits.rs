//! Every limit the tracker puts on what clients send and hold, in one place: defaults, the
//! environment variables (and flags) that change them, and the checks of warrior input that run
//! before a request joins a batch. docs/limits-and-security.md lists the same table.

use std::time::Duration;

/// `2^50`: the most bytes one domain of one report may carry (1 PiB).
pub const BYTES_MAX: u64 = 1 << 50;
/// `2^53`: counters stay exact integers below this (Lua numbers and sorted-set scores are doubles);
/// a report that would carry a project's byte total past it is refused.
pub const COUNTER_MAX: u64 = 1 << 53;

/// The completion log entries a project keeps in Redis at most while they cannot be archived
/// (`TRACKER_LOG_BUDGET`; about 300 bytes each): past it the oldest are dropped and counted as
/// lost (`Store::shed_log`).
pub const LOG_BUDGET: u64 = 1_000_000;

/// The longest item name accepted anywhere, in bytes (the default of [`Limits::item`]).
pub const MAX_ITEM_LEN: usize = 4096;

/// Whether `name` is a downloader's name: `\A[-_a-zA-Z0-9]{3,30}\z`.
pub fn valid_downloader(name: &str) -> bool {
    (3..=30).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Admin logins' password checks running at once (each holds a core and 19 MiB for tens of
/// milliseconds).
pub const PASSWORD_CHECKS: usize = 4;

/// The limits, as `tracker serve` reads them (flags, or the environment).
#[derive(clap::Args, Clone, Debug)]
pub struct Limits {
    /// Longest `downloader` name, in bytes (the name must also be 3-30 of `[-_a-zA-Z0-9]`).
    #[arg(long, env = "TRACKER_MAX_DOWNLOADER", default_value_t = 64)]
    pub downloader: usize,
    /// Longest `version`, in bytes.
    #[arg(long, env = "TRACKER_MAX_VERSION", default_value_t = 64)]
    pub version: usize,
    /// Longest `id` of a done (string or JSON object), serialised, in bytes.
    #[arg(long, env = "TRACKER_MAX_ID", default_value_t = 4096)]
    pub id: usize,
    /// The stored user agent is cut to this many bytes.
    #[arg(long, env = "TRACKER_MAX_USER_AGENT", default_value_t = 256)]
    pub user_agent: usize,
    /// Longest item name, in bytes: at most 1 MiB, the longest name a segment file holds
    /// (`segment::MAX_FIELD`), so every item can go to disk and come back.
    #[arg(long, env = "TRACKER_MAX_ITEM", default_value_t = MAX_ITEM_LEN,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=crate::segment::MAX_FIELD as u64))]
    pub item: usize,
    /// The most items of one `multi=N` claim, or of one done.
    #[arg(long, env = "TRACKER_MAX_MULTI", default_value_t = 1000)]
    pub multi: usize,
    /// The most byte domains in one done's `bytes`.
    #[arg(long, env = "TRACKER_MAX_DOMAINS", default_value_t = 16)]
    pub domains: usize,
    /// Largest body of a request (`/request`, `multi=N//request`, `release`), in bytes.
    #[arg(long, env = "TRACKER_MAX_CLAIM_BODY", default_value_t = 16 * 1024)]
    pub claim_body: usize,
    /// A client must send its request headers within this many seconds.
    #[arg(long, env = "TRACKER_HEADER_TIMEOUT", default_value_t = 10)]
    pub header_timeout_s: u64,
    /// A request (but the live feeds and the panel's streamed uploads) must be answered within
    /// this many seconds; 408 otherwise.
    #[arg(long, env = "TRACKER_REQUEST_TIMEOUT", default_value_t = 30)]
    pub request_timeout_s: u64,
    /// Milliseconds a claim or done waits for Redis before it is answered 503 with
    /// `Retry-After` (a hung or unreachable Redis never holds a warrior).
    #[arg(long, env = "TRACKER_REDIS_DEADLINE", default_value_t = 1000)]
    pub redis_deadline_ms: u64,
    /// Most open connections (0: three quarters of the process's file limit, less 64). Beyond,
    /// a connection gets 503 and is closed.
    #[arg(long, env = "TRACKER_MAX_CONNECTIONS", default_value_t = 0)]
    pub connections: usize,
    /// Most live viewers (websocket and server-sent events) in all; 503 beyond.
    #[arg(long, env = "TRACKER_MAX_VIEWERS", default_value_t = 20_000)]
    pub viewers: usize,
    /// Most live viewers from one IP; 503 beyond.
    #[arg(long, env = "TRACKER_MAX_VIEWERS_PER_IP", default_value_t = 50)]
    pub viewers_per_ip: usize,
    /// Completion log entries a project keeps in Redis at most while they cannot be archived
    /// (an archive directory that cannot be written); past it the oldest go, counted as lost
    /// (`tracker_log_entries_lost_total`). About 300 bytes an entry.
    #[arg(long, env = "TRACKER_LOG_BUDGET", default_value_t = LOG_BUDGET)]
    pub log_budget: u64,
    /// Public page and JSON reads a second from one address (0: no limit); 429 beyond.
    #[arg(long, env = "TRACKER_PUBLIC_READS", default_value_t = 50)]
    pub public_reads: u64,
    /// Public reads one address may make at once beyond its rate.
    #[arg(long, env = "TRACKER_PUBLIC_READS_BURST", default_value_t = 500)]
    pub public_reads_burst: u64,
    /// Seconds between the pings a websocket viewer must answer; one silent for two and a half
    /// of them is dropped.
    #[arg(long, env = "TRACKER_VIEWER_PING", default_value_t = 30)]
    pub viewer_ping_s: u64,
    /// Largest backfeed body as sent (compressed or not), in bytes; 413 beyond.
    #[arg(long, env = "TRACKER_MAX_BACKFEED_BODY", default_value_t = 16 * 1024 * 1024)]
    pub backfeed_body: usize,
    /// Largest backfeed body once decompressed, in bytes; 413 beyond.
    #[arg(long, env = "TRACKER_MAX_BACKFEED_DECODED", default_value_t = 64 * 1024 * 1024)]
    pub backfeed_decoded: u64,
    /// Beyond its first MiB, a compressed backfeed body may decompress to at most this many
    /// times the compressed bytes read so far; 413 beyond.
    #[arg(long, env = "TRACKER_MAX_BACKFEED_RATIO", default_value_t = 100)]
    pub backfeed_ratio: u64,
    /// Most records of one backfeed call; 413 beyond.
    #[arg(long, env = "TRACKER_MAX_BACKFEED_RECORDS", default_value_t = 100_000)]
    pub backfeed_records: usize,
    /// Backfeed bodies decompressed and split at once (on threads apart from the async
    /// workers); more calls wait for a turn.
    #[arg(long, env = "TRACKER_BACKFEED_DECODES", default_value_t = 2)]
    pub backfeed_decodes: usize,
    /// Rescue-me posts from one IP (an IPv6 /64) per minute, with as many at once; 429 beyond
    /// (0: no limit).
    #[arg(long, env = "TRACKER_RESCUE_PER_MINUTE", default_value_t = 10)]
    pub rescue_per_minute: u64,
    /// Most items (non-empty lines) of one rescue-me post; 413 beyond.
    #[arg(long, env = "TRACKER_MAX_RESCUE_ITEMS", default_value_t = 1000)]
    pub rescue_items: usize,
    /// Backfeed sinks, comma-separated: a whole key (`SLUG-SECRET`) or a slug (any key of it).
    /// The grab scripts post to projects a tracker may not host, and kill their item when
    /// refused: a call to a sink is answered `{"status_code":200,"added":0,...}` and its
    /// records dropped, unread.
    #[arg(long, env = "TRACKER_BACKFEED_SINKS", value_delimiter = ',')]
    pub backfeed_sinks: Vec<String>,
}

/// What a compressed backfeed body may decompress to before the ratio cap applies.
pub const BACKFEED_RATIO_GRACE: u64 = 1024 * 1024;

impl Default for Limits {
    fn default() -> Self {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            limits: Limits,
        }
        <Only as clap::Parser>::parse_from(["tracker"]).limits
    }
}

impl Limits {
    /// Largest body of a done: a done of a whole `multi=N` batch of the longest names, each
    /// escaped as JSON might (NULs as `\u0000`), with the other fields at their limits.
    pub fn done_body(&self) -> usize {
        self.multi * (self.item + 6) + self.id * 2 + 64 * 1024
    }

    /// Largest body of a rescue-me post: its most items at the longest name, each
    /// form-encoded (`%XX` per byte) with its line break.
    pub fn rescue_body(&self) -> usize {
        self.rescue_items * (self.item * 3 + 6) + 1024
    }

    /// The header-read timeout.
    pub fn header_timeout(&self) -> Duration {
        Duration::from_secs(self.header_timeout_s.max(1))
    }

    /// The interval of the viewers' pings.
    pub fn viewer_ping(&self) -> Duration {
        Duration::from_secs(self.viewer_ping_s.max(1))
    }

    /// How long a claim or done waits for Redis.
    pub fn redis_deadline(&self) -> Duration {
        Duration::from_millis(self.redis_deadline_ms.max(10))
    }

    /// The per-request timeout.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_s.max(1))
    }

    /// The connection cap: as set, else from the process's open-file limit.
    pub fn max_connections(&self) -> usize {
        if self.connections > 0 {
            return self.connections;
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        let files = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
            lim.rlim_cur.min(1 << 20) as usize
        } else {
            1024
        };
        (files * 3 / 4).saturating_sub(64).max(16)
    }

    /// `Err(reason)` unless `name` is a valid downloader name within the limit.
    pub fn check_downloader(&self, name: &str) -> Result<(), String> {
        if name.len() > self.downloader {
            return Err(format!(
                "downloader is longer than {} bytes.",
                self.downloader
            ));
        }
        Ok(())
    }

    /// `Err(reason)` unless `version` is within the limit.
    pub fn check_version(&self, version: &str) -> Result<(), String> {
        if version.len() > self.version {
            return Err(format!("version is longer than {} bytes.", self.version));
        }
        Ok(())
    }

    /// Items of a done (NUL-joined): each 1 to `item` bytes, not only NULs, at most `multi`.
    pub fn split_items(&self, joined: &str) -> Result<Vec<String>, String> {
        let items: Vec<String> = joined.split('\0').map(String::from).collect();
        if items.len() > self.multi {
            return Err(format!("At most {} items per done.", self.multi));
        }
        if items.iter().any(|i| i.is_empty() || i.len() > self.item) {
            return Err(format!(
                "Items must be 1 to {} bytes, joined by single NULs.",
                self.item
            ));
        }
        Ok(items)
    }

    /// A done's `bytes`: at most `domains` domains, each an integer from 0 to 2^50, written as one.
    pub fn check_bytes(
        &self,
        bytes: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Vec<(String, u64)>, String> {
        if bytes.len() > self.domains {
            return Err(format!("At most {} byte domains.", self.domains));
        }
        let mut out = Vec::with_capacity(bytes.len());
        for (domain, value) in bytes {
            if domain.is_empty() || domain.len() > 64 || domain.contains(['\0', '"', '\\', ',']) {
                return Err("Invalid domain name in bytes.".into());
            }
            match value.as_u64() {
                Some(n) if value.is_u64() && n <= BYTES_MAX => out.push((domain.clone(), n)),
                _ => {
                    return Err(format!(
                        "bytes.{domain} must be an integer from 0 to 2^50 ({BYTES_MAX})."
                    ))
                }
            }
        }
        Ok(out)
    }

    /// A done's `id` as the JSON text stored, within the limit.
    pub fn id_text(&self, id: Option<&serde_json::Value>) -> Result<String, String> {
        let text = id.map(|v| v.to_string()).unwrap_or_default();
        if text.len() > self.id {
            return Err(format!("id is longer than {} bytes serialised.", self.id));
        }
        Ok(text)
    }

    /// `ua` cut to the stored length, at a character boundary.
    pub fn cut_user_agent(&self, ua: &str) -> String {
        let mut end = ua.len().min(self.user_agent);
        while !ua.is_char_boundary(end) {
            end -= 1;
        }
        ua[..end].to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bytes(v: serde_json::Value) -> Result<Vec<(String, u64)>, String> {
        Limits::default().check_bytes(v.as_object().expect("object"))
    }

    #[test]
    fn bytes_are_integers_from_zero_to_two_to_the_fifty() {
        assert_eq!(bytes(json!({"data": 0})).unwrap(), vec![("data".into(), 0)]);
        assert!(bytes(json!({"data": BYTES_MAX})).is_ok());
        for bad in [
            json!({"data": BYTES_MAX + 1}),
            json!({"data": u64::MAX}),
            json!({"data": -1}),
            json!({"data": 1.5}),
            json!({"data": 1e17}),
            json!({"data": 1.0}),
            json!({"data": "12"}),
            json!({"data": null}),
            json!({"": 1}),
            json!({"a,b": 1}),
        ] {
            assert!(bytes(bad.clone()).is_err(), "{bad} accepted");
        }
        let many: serde_json::Map<_, _> = (0..17).map(|i| (format!("d{i}"), json!(1))).collect();
        assert!(Limits::default().check_bytes(&many).is_err());
    }

    #[test]
    fn items_are_non_empty_and_bounded() {
        let l = Limits::default();
        assert_eq!(l.split_items("a\0b").unwrap(), vec!["a", "b"]);
        for bad in ["", "\0", "a\0", "\0\0", "a\0\0b"] {
            assert!(l.split_items(bad).is_err(), "{bad:?} accepted");
        }
        assert!(l.split_items(&"x".repeat(4097)).is_err());
        assert!(l.split_items(&vec!["x"; 1001].join("\0")).is_err());
    }

    #[test]
    fn the_user_agent_is_cut_at_a_character_boundary() {
        let l = Limits::default();
        let ua = "é".repeat(200);
        let cut = l.cut_user_agent(&ua);
        assert!(cut.len() <= 256 && cut.len() >= 255);
        assert!(ua.starts_with(&cut));
    }

    #[test]
    fn the_done_body_cap_fits_a_whole_batch_of_the_longest_names() {
        let l = Limits::default();
        assert!(l.done_body() > 1000 * 4096 && l.done_body() < 5 * 1024 * 1024);
        assert!(l.max_connections() >= 16);
    }
}
