//! Every Redis key name, built in one place.
//!
//! Scheme (namespace `ns`, default `t`; `{SLUG}` is a Redis Cluster hash tag so that one Lua
//! script may touch all of a project's keys):
//!
//! ```text
//! ns:projects                  set     slugs of all projects                      (global)
//! ns:{SLUG}:meta               hash    title, domains, state, settings
//! ns:{SLUG}:todo               set     main queue (random pop)
//! ns:{SLUG}:todo:backfeed      set     items discovered by workers
//! ns:{SLUG}:todo:secondary     set     lower-priority items
//! ns:{SLUG}:todo:redo          set     items to retry
//! ns:{SLUG}:out                zset    claimed items, scored by claim time (ms)
//! ns:{SLUG}:claims             hash    item -> JSON claim record (downloader, ip, time, ...)
//! ns:{SLUG}:done               set     completed items
//! ns:{SLUG}:failed             hash    item -> reason
//! ns:{SLUG}:stats              hash    done_items, done_bytes
//! ns:{SLUG}:dl:items           zset    downloader -> items done
//! ns:{SLUG}:dl:bytes           zset    downloader -> bytes done
//! ns:{SLUG}:dl:version         hash    downloader -> last script version
//! ns:{SLUG}:dl:seen            hash    downloader -> last done time (ms)
//! ns:{SLUG}:domain_bytes       hash    domain -> bytes done
//! ns:{SLUG}:seq                string  sequence number of the last completion event
//! ns:{SLUG}:history            list    recent completion events (JSON), newest first, capped
//! ns:{SLUG}:events             channel completion events (pub/sub)
//! ```

/// Names of the queues an item can wait in, in claim order.
pub const QUEUES: [&str; 4] = ["todo", "todo:backfeed", "todo:secondary", "todo:redo"];

/// How many completion events the capped history keeps.
pub const HISTORY_LEN: usize = 2000;

/// The key namespace of one install; cheap to clone.
#[derive(Clone, Debug)]
pub struct Keys {
    ns: std::sync::Arc<str>,
}

impl Keys {
    /// Keys under the namespace `ns` (e.g. `t`).
    pub fn new(ns: &str) -> Self {
        Self { ns: ns.into() }
    }

    /// The namespace itself.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// The global set of project slugs.
    pub fn projects(&self) -> String {
        format!("{}:projects", self.ns)
    }

    /// The pattern matching every project's event channel, for `PSUBSCRIBE`.
    pub fn events_pattern(&self) -> String {
        format!("{}:{{*}}:events", self.ns)
    }

    /// The slug of a project's event channel, if `channel` is one.
    pub fn slug_of_events_channel<'a>(&self, channel: &'a str) -> Option<&'a str> {
        channel
            .strip_prefix(&*self.ns)?
            .strip_prefix(":{")?
            .strip_suffix("}:events")
    }

    /// The keys of one project.
    pub fn project(&self, slug: &str) -> ProjectKeys {
        ProjectKeys {
            prefix: format!("{}:{{{}}}:", self.ns, slug),
        }
    }
}

/// The keys of one project; every name carries the project's hash tag.
#[derive(Clone, Debug)]
pub struct ProjectKeys {
    prefix: String,
}

impl ProjectKeys {
    /// `prefix` + `name`, e.g. `t:{proj}:todo`.
    pub fn key(&self, name: &str) -> String {
        format!("{}{}", self.prefix, name)
    }
    /// The project's settings hash.
    pub fn meta(&self) -> String {
        self.key("meta")
    }
    /// The queue called `name` (one of [`QUEUES`]).
    pub fn queue(&self, name: &str) -> String {
        self.key(name)
    }
    /// All queues, in claim order.
    pub fn queues(&self) -> Vec<String> {
        QUEUES.iter().map(|q| self.key(q)).collect()
    }
    /// Claimed items by claim time.
    pub fn out(&self) -> String {
        self.key("out")
    }
    /// Claim records.
    pub fn claims(&self) -> String {
        self.key("claims")
    }
    /// Completed items.
    pub fn done(&self) -> String {
        self.key("done")
    }
    /// Failed items with their reason.
    pub fn failed(&self) -> String {
        self.key("failed")
    }
    /// Project counters.
    pub fn stats(&self) -> String {
        self.key("stats")
    }
    /// Items done per downloader.
    pub fn dl_items(&self) -> String {
        self.key("dl:items")
    }
    /// Bytes done per downloader.
    pub fn dl_bytes(&self) -> String {
        self.key("dl:bytes")
    }
    /// Last script version per downloader.
    pub fn dl_version(&self) -> String {
        self.key("dl:version")
    }
    /// Last completion time per downloader.
    pub fn dl_seen(&self) -> String {
        self.key("dl:seen")
    }
    /// Bytes per domain.
    pub fn domain_bytes(&self) -> String {
        self.key("domain_bytes")
    }
    /// The event sequence counter.
    pub fn seq(&self) -> String {
        self.key("seq")
    }
    /// The capped event history.
    pub fn history(&self) -> String {
        self.key("history")
    }
    /// The pub/sub channel of completion events.
    pub fn events(&self) -> String {
        self.key("events")
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
    fn event_channels_map_back_to_their_slug() {
        let keys = Keys::new("ns1");
        let ch = keys.project("my-proj").events();
        assert_eq!(keys.slug_of_events_channel(&ch), Some("my-proj"));
        assert_eq!(keys.slug_of_events_channel("other:{x}:events"), None);
    }
}
