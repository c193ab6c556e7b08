//! Live viewers (the leaderboard's websocket, the server-sent events feed) admitted under the
//! caps of [`crate::limits::Limits`]: so many in all and so many per IP. A viewer holds its
//! [`Slot`] while it watches; the slot is given back when it is dropped, however the viewer ends.

use crate::limits::Limits;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// How long a viewer refused for the caps is asked to wait.
pub const RETRY_AFTER_S: u64 = 10;

/// The viewers watching now; cheap to clone.
#[derive(Clone, Default)]
pub struct Viewers(Arc<Mutex<Counts>>);

#[derive(Default)]
struct Counts {
    total: usize,
    by_ip: HashMap<String, usize>,
}

/// No room for another viewer: why (answered 503, retry in [`RETRY_AFTER_S`]).
#[derive(Debug)]
pub struct Full(pub String);

/// A watching viewer's place, given back on drop.
pub struct Slot {
    viewers: Viewers,
    ip: String,
}

impl Viewers {
    /// A slot for a viewer from `ip`, or 503 when the tracker or that IP has its maximum.
    pub fn admit(&self, ip: &str, limits: &Limits) -> Result<Slot, Full> {
        let mut c = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if c.total >= limits.viewers {
            return Err(Full(format!(
                "The tracker has its maximum of {} live viewers.",
                limits.viewers
            )));
        }
        let mine = c.by_ip.get(ip).copied().unwrap_or(0);
        if mine >= limits.viewers_per_ip {
            return Err(Full(format!(
                "Your address has its maximum of {} live viewers.",
                limits.viewers_per_ip
            )));
        }
        c.total += 1;
        c.by_ip.insert(ip.to_string(), mine + 1);
        Ok(Slot {
            viewers: self.clone(),
            ip: ip.to_string(),
        })
    }

    /// How many viewers watch now.
    pub fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).total
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.viewers.0.lock().unwrap_or_else(|e| e.into_inner());
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                c.by_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewers_are_capped_in_all_and_per_ip_and_slots_come_back() {
        let limits = Limits {
            viewers: 3,
            viewers_per_ip: 2,
            ..Limits::default()
        };
        let v = Viewers::default();
        let a1 = v.admit("a", &limits).unwrap();
        let _a2 = v.admit("a", &limits).unwrap();
        assert!(v.admit("a", &limits).is_err(), "per IP");
        let _b1 = v.admit("b", &limits).unwrap();
        assert!(v.admit("c", &limits).is_err(), "in all");
        drop(a1);
        assert_eq!(v.count(), 2);
        let _c1 = v.admit("c", &limits).unwrap();
        assert_eq!(v.0.lock().unwrap().by_ip.len(), 3);
    }
}
