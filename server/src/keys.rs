//! Every Redis key name, built in one place.
//!
//! Scheme (namespace `ns`, default `t`; `{SLUG}` is a Redis Cluster hash tag so that one Lua
//! script may touch all of a project's keys). Global keys are never touched by project scripts.
//!
//! On a Redis Cluster, every script's keys hash to one slot (checked at each call, see
//! [`crate::store::scripts::one_slot`]): a project's keys by `{SLUG}`, the two login counters of
//! a network by `{<net>}`. So a project lives on one shard, which is also its ceiling: its claims
//! and dones run on that shard's one core. The claim and done paths touch only project keys
//! (global blocks and settings are read at most once a second per process, see
//! `GLOBAL_BLOCKS_TTL` and `SETTINGS_TTL`); the other global keys are the admin's.
//!
//! ```text
//! ns:projects                  set     slugs of all projects                      (global)
//! ns:destroyed                 hash    slug -> ms: destroyed, files not yet deleted (global)
//! ns:blocked:ip / :dl          hash    global blocks: value -> JSON entry         (global)
//! ns:{SLUG}:meta               hash    title, domains, state, settings, queues (claim order),
//!                                      pl:<name> ("rate burst" of a pattern limit)
//! ns:{SLUG}:todo               zset    main queue (score: add sequence; random or FIFO pop)
//! ns:{SLUG}:todo:backfeed      zset    items discovered by workers (+ :<shard> parts)
//! ns:{SLUG}:todo:secondary     zset    lower-priority items
//! ns:{SLUG}:todo:redo          zset    items to retry
//! ns:{SLUG}:<queue>#<pattern>  zset    the part of a queue matching a pattern limit
//! ns:{SLUG}:todo:d:<dl>        zset    a downloader's personal queue
//! ns:{SLUG}:qseq               string  last FIFO queue score given (ms clock, see _lib.lua)
//! ns:{SLUG}:out                zset    claimed items, scored by claim time (ms)
//! ns:{SLUG}:claims             hash    item -> JSON claim record {d, ip, t, ua, v, n, r, q, p}
//! ns:{SLUG}:attempts           hash    item -> times claimed, while not claimed (until done)
//! ns:{SLUG}:done               set     completed items
//! ns:{SLUG}:failed             hash    item -> JSON {reason, t}
//! ns:{SLUG}:decay              hash    item -> "score reclaims": decay score (below 1) and the
//!                                      reclaims that made it, of items waiting or claimed
//! ns:{SLUG}:timeline           hash    item -> last transitions (a claim's own: in its record)
//! ns:{SLUG}:stats              hash    done_items, done_bytes, pq (items in personal queues),
//!                                      known (items the project knows: added minus dropped;
//!                                      absent in projects from before it was kept),
//!                                      disk_done / disk_todo (items done / waiting in segment
//!                                      files on disk), log_lost (log entries dropped unarchived
//!                                      past TRACKER_LOG_BUDGET, `log_shed.lua`)
//! ns:{SLUG}:dl:items / :bytes  zset    downloader -> items / bytes done
//! ns:{SLUG}:dl:version / :seen hash    downloader -> last version / last done (ms)
//! ns:{SLUG}:dl:claims          hash    downloader -> items held
//! ns:{SLUG}:blocked:ip / :dl   hash    project blocks: value -> JSON {reason, by, t, expires}
//! ns:{SLUG}:ratelimit          hash    limiter -> GCRA theoretical arrival time (ms)
//! ns:{SLUG}:domain_bytes       hash    domain -> bytes done
//! ns:{SLUG}:st:<day>           hash    "<minute of day>:<counter>" -> n, 35 days
//! ns:{SLUG}:tally              hash    counter -> lifetime total of the minutes tallied;
//!                                      `minute`, the last one tallied (`tally.lua`)
//! ns:{SLUG}:dw:<minute>        hash    "<dl> i" -> items, "<dl> b" -> bytes done in that minute
//!                                      (since the epoch), 25 hours: the rate windows
//! ns:{SLUG}:dwh:<hour>         hash    the same per hour, 26 hours
//! ns:{SLUG}:u:dl:<day> / u:ip  hll     unique downloaders / IPs per day, 31 days
//! ns:{SLUG}:u:month:<YYYY-MM>  hll     unique downloaders per calendar month (UTC), 400 days
//! ns:{SLUG}:chart              list    "minute items bytes", cumulative, one per minute
//! ns:{SLUG}:dlc:<dl>           list    "minute bytes", cumulative, per downloader, up to the
//!                                      minute before its last report (see `dlc_last`)
//! ns:{SLUG}:dlc_last           hash    downloader -> minute of its last report; that minute's
//!                                      point is its current total (`dl:bytes`)
//! ns:{SLUG}:log                stream  completion log (older entries leave it once archived to
//!                                      disk; at most TRACKER_LOG_BUDGET while archiving fails)
//! ns:{SLUG}:targets            hash    upload target -> 1 active / 0 inactive
//! ns:{SLUG}:uploads            list    recent `uploaded` reports (capped)
//! ns:{SLUG}:filter             hash    backfeed filter layers: count/capacity/blocks/k
//! ns:{SLUG}:filter:<i>         hash    layer i: block number -> 64 bytes (absent = zeros)
//! ns:{SLUG}:fed                hash    "<key id>:records" / ":added" / ":last" -> what each
//!                                      backfeed key fed (records, new ones, last time, ms)
//! ns:{SLUG}:seq                string  sequence number of the last completion event
//! ns:{SLUG}:history            list    recent completion events (JSON), newest first, capped
//! ns:{SLUG}:events             channel completion events (sharded pub/sub: SPUBLISH, SSUBSCRIBE)
//! ns:{SLUG}:admin              hash    panel-only fields: description (sanitised HTML), priority
//!                                      (niceness), listing (JSON: the Warrior listing)
//! ns:{SLUG}:status             string  the lifecycle state last recorded
//! ns:{SLUG}:lifecycle          list    recorded state changes (JSON {state, from, t}), newest
//!                                      first, capped
//! ns:{SLUG}:segs               hash    segment id -> JSON {kind, part, count, bytes, t, min, max}:
//!                                      the segment files on disk (server/src/segment.rs)
//! ns:{SLUG}:segs:restored      hash    queue segment id -> records of it back in Redis
//! ns:{SLUG}:segs:gone          hash    queue segment id -> ms (Redis's clock) it left the registry
//! ns:{SLUG}:offload            hash    gen (segments' version), run, ok_t (last round without a
//!                                      failure), error, error_t, log_files, log_bytes
//! ns:{SLUG}:offload:lease      string  token of the one process that offloads (expires)
//! ns:admin:users               set     lowercase names of admin accounts             (global)
//! ns:admin:user:<name>         hash    account: hash (argon2id PHC), role, projects, t, gen
//!                                      (session generation, new with each password)   (global)
//! ns:admin:setup               string  one-time setup token while no account exists  (global)
//! ns:admin:fail:ip:{<net>}     string  login attempts from an IPv4 address or IPv6 /64, any
//!                                      name, not taken back by a success (expires)   (global)
//! ns:admin:fail:pair:{<net>}|<name> string  the same, of one name; `{<net>}` puts both
//!                                      counters of a network in one slot (one script) (global)
//! ns:admin:audit               list    admin actions (JSON), newest first, capped     (global)
//! ns:admin:token:<sha256>      hash    API token (by the SHA-256 of its secret): user, id,
//!                                      name, t                                       (global)
//! ns:admin:tokens:<name>       hash    an account's tokens: id -> JSON {hash, name, t} (global)
//! ns:pipelines                hash    pipeline name -> JSON {hash, name, tags, match_only, t}
//! ns:pipelines:revoked        hash    revoked pipeline name -> ms (never issued again)
//!                                      (hash: the SHA-256 of its secret)              (global)
//! ns:pipeline:<sha256>         string  the pipeline (JSON {name, tags, match_only, t}) whose
//!                                      secret has this SHA-256; gone when revoked    (global)
//! ns:rescue:<net>              string  rescue-me posts of an IPv4 address or IPv6 /64: GCRA
//!                                      theoretical arrival time (ms), expiring     (global)
//! ns:settings:version          string  settings version: bumped by every change of settings,
//!                                      blocks, upload targets, projects, the warrior list (global)
//! ns:settings                  channel the new settings version, on each bump       (global)
//! ns:warrior:projects          string  the Warrior HQ project list (projects.json) (global)
//! ns:warrior:projects:versions list    earlier project lists, newest first, last 20 (global)
//! ns:hq:seq                    string  last warrior id handed out by /api/register.json (global)
//! ns:hq:warriors               hash    warrior id -> JSON instance record            (global)
//! ns:hq:seen                   zset    warrior id -> last update (ms); forgotten after 15 min
//! ns:hq:net:<net>              zset    warrior id -> last update (ms), of one network (IPv4
//!                                      address, IPv6 /64); at most MAX_WARRIORS_PER_NETWORK,
//!                                      expiring 15 min after the last update (global)
//! ns:hq:auto                   string  auto_project as last recorded ("" for none) (global)
//! ns:hq:pin                    string  the project an admin pinned as auto_project (global)
//! ns:u:month:<YYYY-MM>         hll     unique downloaders of all projects per month (UTC),
//!                                      400 days; written by each process every few seconds
//!                                      (`store::contributors`), never by a script   (global)
//! ns:fleet:{api}:clients       hash    API downloader id (`SLUG:HEX`) -> JSON record: project,
//!                                      downloader, ip, user agent, seesaw and script version
//!                                      (global; `{api}`: every fleet key in one slot)
//! ns:fleet:{api}:seen          zset    API downloader id -> last call (ms); forgotten after
//!                                      the fleet silence, at most MAX_FLEET_CLIENTS (global)
//! ns:fleet:{api}:p:<SLUG>      zset    the same, of one project's downloaders   (global)
//! ns:fleet:{api}:n:<10 s>      hash    API downloader id -> items done in that 10-second
//!                                      window, expiring after 2 minutes: the items/s (global)
//! <session id>                 string  tower-sessions record (the Redis session store
//!                                      sets no prefix; ids are 22 random base64 chars)
//! ```
//!
//! One project's keys are methods of [`ProjectKeys`] (`keys/project.rs`); the keys each of its
//! scripts takes, in its header's order, one method per script in `keys/script_keys.rs`
//! (`claim_keys`, `done_keys`, ...); the per-minute counter codes are [`Counter`]
//! (`keys/counter.rs`).

/// The main queue.
pub const TODO: &str = QUEUES[0];
/// Items discovered by workers (`backfeed`), plus its shards `todo:backfeed:<shard>`.
pub const BACKFEED: &str = QUEUES[1];
/// Lower-priority items.
pub const SECONDARY: &str = QUEUES[2];
/// Items to retry.
pub const REDO: &str = QUEUES[3];
/// The prefix of a downloader's personal queue, `todo:d:<downloader>`.
pub const PERSONAL: &str = "todo:d:";

/// Names of the queues an item can wait in, in claim order (shared with the panel).
pub use app::model::admin::QUEUES;

mod counter;
mod project;
mod script_keys;
pub use counter::Counter;
pub use project::{ProjectKeys, DERIVED};

/// How many entries the audit log keeps.
pub const AUDIT_LEN: usize = 100_000;

/// How many completion events the capped history keeps.
pub const HISTORY_LEN: usize = 2000;

/// Of one fold run's events, how many (its last) join the history: a run under load holds
/// about a thousand, each passed to Redis and pushed and trimmed again within a second, while a
/// watcher that falls further behind than this needs a snapshot anyway.
pub const HISTORY_RUN_TAIL: usize = 256;

/// How many done reports the completion log keeps in Redis.
pub const LOG_LEN: usize = 100_000;

/// The key namespace of one install; cheap to clone.
#[derive(Clone, Debug)]
pub struct Keys {
    ns: std::sync::Arc<str>,
    /// [`Keys::segment_tag`], derived once.
    tag: std::sync::Arc<str>,
}

impl Keys {
    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// The tag that ends the name of every segment file this namespace writes (`n` and the
    /// first 8 hex digits of the namespace's SHA-256): installs (namespaces) that share an
    /// offload directory never sweep or purge each other's files.
    pub fn segment_tag(&self) -> String {
        self.tag.to_string()
    }

    /// Keys under the namespace `ns` (e.g. `t`).
    pub fn new(ns: &str) -> Self {
        use sha2::{Digest, Sha256};
        let hash = Sha256::digest(ns.as_bytes());
        let hex: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
        Self {
            ns: ns.into(),
            tag: format!("n{hex}").into(),
        }
    }

    /// The settings version (`crate::store::SettingsVersion`).
    pub fn settings_version(&self) -> String {
        format!("{}:settings:version", self.ns)
    }

    /// The channel of settings versions.
    pub fn settings_channel(&self) -> String {
        format!("{}:settings", self.ns)
    }

    /// A counter that a bulk add waiting for the offloader bumps, so that every process's
    /// offloader looks at the projects at once instead of at its next round.
    pub fn offload_wake(&self) -> String {
        format!("{}:offload:wake", self.ns)
    }

    /// The global set of project slugs.
    pub fn projects(&self) -> String {
        format!("{}:projects", self.ns)
    }

    /// The global hash of revoked pipeline names -> when (ms): never given to a new pipeline.
    pub fn revoked_pipelines(&self) -> String {
        format!("{}:pipelines:revoked", self.ns)
    }

    /// The global hash of destroyed projects whose files (segments, log archives) may still be
    /// on disk: slug -> when (ms). A slug in it cannot be created again until they are gone.
    pub fn destroyed(&self) -> String {
        format!("{}:destroyed", self.ns)
    }

    /// The slug of a project's event channel, if `channel` is one.
    pub fn slug_of_events_channel<'a>(&self, channel: &'a str) -> Option<&'a str> {
        channel
            .strip_prefix(&*self.ns)?
            .strip_prefix(":{")?
            .strip_suffix("}:events")
    }

    /// Global blocks of `kind` (`ip` or `dl`).
    pub fn global_blocked(&self, kind: &str) -> String {
        format!("{}:blocked:{kind}", self.ns)
    }

    /// The set of admin account names.
    pub fn admin_users(&self) -> String {
        format!("{}:admin:users", self.ns)
    }

    /// One admin account (`name` lowercase).
    pub fn admin_user(&self, name: &str) -> String {
        format!("{}:admin:user:{name}", self.ns)
    }

    /// The one-time setup token.
    pub fn admin_setup(&self) -> String {
        format!("{}:admin:setup", self.ns)
    }

    /// Login attempts from network `net` (an IPv4 address or an IPv6 /64), any name.
    pub fn admin_login_net(&self, net: &str) -> String {
        format!("{}:admin:fail:ip:{{{net}}}", self.ns)
    }

    /// Login attempts of account name `name` from network `net`; in the slot of
    /// [`Keys::admin_login_net`], as one script counts both.
    pub fn admin_login_pair(&self, name: &str, net: &str) -> String {
        format!("{}:admin:fail:pair:{{{net}}}|{name}", self.ns)
    }

    /// Login attempts of account name `name` from every network.
    pub fn admin_login_name(&self, name: &str) -> String {
        format!("{}:admin:fail:name:{name}", self.ns)
    }

    /// The browsers account `name` logged in from (the SHA-256 of each one's device cookie,
    /// with when it was last used): logins from them are not limited by the name's count.
    pub fn admin_devices(&self, name: &str) -> String {
        format!("{}:admin:devices:{name}", self.ns)
    }

    /// The audit log.
    pub fn admin_audit(&self) -> String {
        format!("{}:admin:audit", self.ns)
    }

    /// An API token, by the hex SHA-256 of its secret.
    pub fn admin_token(&self, hash: &str) -> String {
        format!("{}:admin:token:{hash}", self.ns)
    }

    /// The API tokens of account `name`.
    pub fn admin_tokens(&self, name: &str) -> String {
        format!("{}:admin:tokens:{name}", self.ns)
    }

    /// Every pipeline, by name.
    pub fn pipelines(&self) -> String {
        format!("{}:pipelines", self.ns)
    }

    /// The pipeline whose secret's SHA-256 is `hash`.
    pub fn pipeline(&self, hash: &str) -> String {
        format!("{}:pipeline:{hash}", self.ns)
    }

    /// The rescue-me limiter of network `net` (an IPv4 address or IPv6 /64).
    pub fn rescue_limiter(&self, net: &str) -> String {
        format!("{}:rescue:{net}", self.ns)
    }

    /// The Warrior HQ project list (`projects.json`).
    pub fn warrior_projects(&self) -> String {
        format!("{}:warrior:projects", self.ns)
    }

    /// Earlier versions of the Warrior HQ project list.
    pub fn warrior_projects_versions(&self) -> String {
        format!("{}:warrior:projects:versions", self.ns)
    }

    /// The last warrior id handed out (Warrior HQ).
    pub fn hq_seq(&self) -> String {
        format!("{}:hq:seq", self.ns)
    }

    /// The secret Warrior HQ ids are made and checked with (set once, by the first process).
    pub fn hq_secret(&self) -> String {
        format!("{}:hq:secret", self.ns)
    }

    /// Warrior instances: id -> JSON record (Warrior HQ).
    pub fn hq_warriors(&self) -> String {
        format!("{}:hq:warriors", self.ns)
    }

    /// Warrior instances by the time of their last update (ms).
    pub fn hq_seen(&self) -> String {
        format!("{}:hq:seen", self.ns)
    }

    /// The warrior instances of one network (an IPv4 address, an IPv6 /64) by the time of their
    /// last update (ms), expiring with the last: what bounds the instances one network holds.
    pub fn hq_network(&self, net: &str) -> String {
        format!("{}:hq:net:{net}", self.ns)
    }

    /// The project `auto_project` names now ("" for none), as last recorded (Warrior HQ).
    pub fn hq_auto(&self) -> String {
        format!("{}:hq:auto", self.ns)
    }

    /// The project an admin pinned as `auto_project` (Warrior HQ).
    pub fn hq_pin(&self) -> String {
        format!("{}:hq:pin", self.ns)
    }

    /// Unique downloaders of all projects in calendar month `month` (`YYYY-MM`).
    pub fn monthly_contributors(&self, month: &str) -> String {
        format!("{}:u:month:{month}", self.ns)
    }

    /// The prefix of the API fleet's keys, `ns:fleet:{api}:` (one cluster slot, for the flush
    /// script; never a project's prefix, which starts `ns:{`).
    pub fn fleet_prefix(&self) -> String {
        format!("{}:fleet:{{api}}:", self.ns)
    }

    /// API downloaders: id -> JSON record.
    pub fn fleet_clients(&self) -> String {
        format!("{}clients", self.fleet_prefix())
    }

    /// API downloaders by the time of their last call (ms).
    pub fn fleet_seen(&self) -> String {
        format!("{}seen", self.fleet_prefix())
    }

    /// One project's API downloaders by the time of their last call (ms).
    pub fn fleet_project(&self, slug: &str) -> String {
        format!("{}p:{slug}", self.fleet_prefix())
    }

    /// Items done per API downloader in the 10-second window `window` (ms / 10,000).
    pub fn fleet_done(&self, window: u64) -> String {
        format!("{}n:{window}", self.fleet_prefix())
    }

    /// The checkpoint of `tracker migrate` from `source` (its URL without password): step ->
    /// cursor or `done`.
    pub fn migration(&self, source: &str) -> String {
        format!("{}:migrate:{source}", self.ns)
    }

    /// The keys of one project.
    pub fn project(&self, slug: &str) -> ProjectKeys {
        ProjectKeys {
            prefix: format!("{}:{{{}}}:", self.ns, slug),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_keys_carry_the_hash_tag() {
        let k = Keys::new("t").project("abc");
        assert_eq!(k.out(), "t:{abc}:out");
        assert_eq!(k.queues()[1], "t:{abc}:todo:backfeed");
    }

    #[test]
    fn both_login_counters_of_a_network_share_a_slot() {
        let keys = Keys::new("t");
        for net in ["192.0.2.1", "2001:db8:1:2::"] {
            let (pair, all) = (
                keys.admin_login_pair("root", net),
                keys.admin_login_net(net),
            );
            assert_eq!(
                fred::util::redis_keyslot(pair.as_bytes()),
                fred::util::redis_keyslot(all.as_bytes()),
                "{pair} {all}"
            );
        }
    }

    #[test]
    fn the_fleet_keys_share_a_slot_and_no_project_prefix() {
        let keys = Keys::new("t");
        let all = [
            keys.fleet_clients(),
            keys.fleet_seen(),
            keys.fleet_project("fleet"),
            keys.fleet_done(17),
        ];
        let slot = fred::util::redis_keyslot(all[0].as_bytes());
        for k in &all {
            assert_eq!(fred::util::redis_keyslot(k.as_bytes()), slot, "{k}");
            assert!(!k.starts_with(keys.project("fleet").prefix()), "{k}");
        }
    }

    #[test]
    fn event_channels_map_back_to_their_slug() {
        let keys = Keys::new("ns1");
        let ch = keys.project("my-proj").events();
        assert_eq!(keys.slug_of_events_channel(&ch), Some("my-proj"));
        assert_eq!(keys.slug_of_events_channel("other:{x}:events"), None);
    }
}
