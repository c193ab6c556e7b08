//! How many workers the tracker's async runtime gets: a core is left to a Redis on this machine.

use super::Cli;

impl Cli {
    /// How many workers the async runtime gets (see [`Cli::worker_threads`]).
    pub fn workers(&self) -> usize {
        if let Some(n) = self.worker_threads {
            return usize::from(n);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let redis_here = self.redis.redis_url.as_deref().is_none_or(redis_is_local);
        if redis_here {
            cores.saturating_sub(1).max(1)
        } else {
            cores
        }
    }
}

/// Whether the Redis at `url` runs on this machine: a unix socket, or a loopback host
/// (`localhost`, `127.x.x.x`, `[::1]`).
pub fn redis_is_local(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    if scheme.contains("unix") {
        return true;
    }
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost") || host.starts_with("127.") || host == "::1"
}

#[cfg(test)]
mod tests {
    use super::redis_is_local;

    #[test]
    fn redis_on_this_machine_is_a_socket_or_a_loopback_host() {
        for url in [
            "redis+unix:///tmp/r.sock",
            "unix:///tmp/r.sock",
            "redis://127.0.0.1:6379",
            "redis://localhost",
            "redis://:secret@127.0.0.2:7000/0",
            "redis://[::1]:6379",
            "redis-cluster://127.0.0.1:7000?node=127.0.0.1:7001",
        ] {
            assert!(redis_is_local(url), "{url}");
        }
        for url in [
            "redis://10.0.0.5:6379",
            "rediss://redis.example.org",
            "redis://user:127.0.0.1@db.example.org",
            "redis://[2001:db8::1]:6379",
            "127.0.0.1:6379",
        ] {
            assert!(!redis_is_local(url), "{url}");
        }
    }
}
