//! Per-address rate limits kept in the process: how often one client address may read the
//! public pages and JSON (GCRA: a steady rate with a burst; 429 with `Retry-After` beyond). The
//! cache makes each read cheap; this keeps one address from taking the cores from the warriors.
//! Memory is bounded: addresses whose allowance is full again are forgotten.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

/// Addresses tracked before the forgotten ones are swept out.
const SWEEP_AT: usize = 50_000;

/// One limit over many addresses.
#[derive(Default)]
pub struct Throttle {
    /// Address -> its theoretical arrival time.
    tats: Mutex<HashMap<String, Instant>>,
}

impl Throttle {
    /// Counts a call from `who` at `per_s` calls a second with `burst`: `Err(wait)` when it must
    /// wait that long first. A zero rate lets everything through.
    pub fn check(&self, who: &str, per_s: u64, burst: u64, now: Instant) -> Result<(), Duration> {
        if per_s == 0 {
            return Ok(());
        }
        let interval = Duration::from_secs(1) / per_s as u32;
        let tolerance = interval * burst.max(1) as u32;
        let mut tats = self.tats.lock().unwrap_or_else(|e| e.into_inner());
        let tat = tats.get(who).copied().unwrap_or(now).max(now);
        if tat > now + tolerance {
            return Err(tat - now - tolerance);
        }
        if tats.len() >= SWEEP_AT {
            tats.retain(|_, t| *t > now);
        }
        tats.insert(who.to_string(), tat + interval);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_its_burst_then_its_rate_and_others_are_apart() {
        let t = Throttle::default();
        let now = Instant::now();
        for _ in 0..5 {
            assert!(t.check("a", 10, 4, now).is_ok());
        }
        let wait = t.check("a", 10, 4, now).unwrap_err();
        assert!(wait <= Duration::from_millis(100), "{wait:?}");
        assert!(t.check("b", 10, 4, now).is_ok(), "another address");
        assert!(t
            .check("a", 10, 4, now + Duration::from_millis(100))
            .is_ok());
        assert!(t.check("a", 0, 0, now).is_ok(), "off");
    }
}
