//! A project's lifecycle (mnbot's job states): what an operator sets, and what the tracker
//! derives from the project's counts.
//!
//! | state | how it comes about | served to warriors |
//! |---|---|---|
//! | `active` | set by an operator; items wait (or none ever came) | yes |
//! | `draining` | derived: `active`, nothing left to hand out, claims still out | reclaims only |
//! | `finished` | derived: `active`, nothing queued or claimed, items were done or failed | no work |
//! | `paused` | set by an operator: a stop for now | no |
//! | `aborted` | set by an operator: the project is stopped for good (it can be set active again) | no |

use serde::{Deserialize, Serialize};

/// The states an operator may set (the `state` setting).
pub const SETTABLE: [&str; 3] = ["active", "paused", "aborted"];

/// The state a project shows: the operator's `stored` state, with `active` refined by the
/// counts into `draining` or `finished`. States of older versions read as their successors
/// (`draining`, once set by hand, as `active`; a hand-set `finished` as `aborted`).
pub fn derive(stored: &str, todo: u64, out: u64, done_or_failed: u64) -> &'static str {
    match stored {
        "paused" => "paused",
        "aborted" | "finished" => "aborted",
        _ if todo > 0 => "active",
        _ if out > 0 => "draining",
        _ if done_or_failed > 0 => "finished",
        _ => "active",
    }
}

/// What the operator set, from a stored value of any version (see [`derive`]).
pub fn settable(stored: &str) -> &'static str {
    match stored {
        "paused" => "paused",
        "aborted" | "finished" => "aborted",
        _ => "active",
    }
}

/// One recorded change of a project's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Transition {
    /// The state entered.
    pub state: String,
    /// The state left (empty for the first record).
    #[serde(default)]
    pub from: String,
    /// When it was noticed (ms).
    pub t: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_is_refined_by_the_counts_and_operator_states_win() {
        assert_eq!(derive("active", 5, 3, 9), "active");
        assert_eq!(derive("active", 0, 3, 9), "draining");
        assert_eq!(derive("active", 0, 0, 9), "finished");
        assert_eq!(derive("active", 0, 0, 0), "active", "a new, empty project");
        assert_eq!(derive("paused", 0, 0, 9), "paused");
        assert_eq!(derive("aborted", 5, 0, 0), "aborted");
        assert_eq!(
            derive("draining", 0, 1, 0),
            "draining",
            "the old hand-set state"
        );
        assert_eq!(derive("finished", 5, 0, 0), "aborted");
        assert_eq!(settable("draining"), "active");
        assert_eq!(settable("finished"), "aborted");
    }
}
