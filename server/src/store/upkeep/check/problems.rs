//! The texts of what `tracker check` finds wrong: claim counts, the count of items a project
//! knows, decay scores.

use std::collections::HashMap;

/// The disagreements of per-downloader claim counts `held` (from the claim records) and
/// `counted` (`dl:claims`).
pub(super) fn tally_problems(
    held: &HashMap<String, i64>,
    counted: &HashMap<String, i64>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (who, n) in counted.iter().filter(|(_, n)| **n != 0) {
        if held.get(who) != Some(n) {
            problems.push(format!(
                "dl:claims says {who} holds {n}, claims say {}",
                held.get(who).unwrap_or(&0)
            ));
        }
    }
    for (who, n) in held {
        if counted.get(who) != Some(n) {
            problems.push(format!(
                "{who} holds {n} claims, dl:claims says {}",
                counted.get(who).unwrap_or(&0)
            ));
        }
    }
    problems
}

/// ", and N WHAT" for a migrated project's gap, or nothing.
pub(super) fn gap_text(gap: i64, what: &str) -> String {
    if gap == 0 {
        String::new()
    } else {
        format!(", and {gap} {what}")
    }
}

/// The violation, if any, of the count of items project `slug` knows (`None`: not kept) against
/// the `in_state` distinct items found in a state.
pub(super) fn count_problem(slug: &str, known: Option<i64>, in_state: usize) -> Option<String> {
    let in_state = in_state as i64;
    let Some(known) = known else {
        // Not verified is not clean: a monitor reading exit codes must not take it for "no loss".
        return Some(format!(
            "item count not kept yet (a project from before it was): \
             `tracker check --recount {slug}` starts it from the {in_state} items in a state now"
        ));
    };
    match known.cmp(&in_state) {
        std::cmp::Ordering::Equal => None,
        std::cmp::Ordering::Greater => Some(format!(
            "project knows {known} items but {in_state} are in a state: {} lost",
            known - in_state
        )),
        std::cmp::Ordering::Less => Some(format!(
            "project knows {known} items but {in_state} are in a state: {} it never counted",
            in_state - known
        )),
    }
}

/// Decay scores (`item -> "score reclaims"`) that break the rules: kept only below 1, after
/// at least one reclaim, for items waiting or claimed (`places`: where each item is).
pub(super) fn decay_problems(
    decay: &HashMap<String, String>,
    places: &HashMap<String, Vec<String>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (item, raw) in decay {
        let at = places.get(item).map(Vec::as_slice).unwrap_or_default();
        if at.is_empty() || at.iter().any(|p| p == "done" || p == "failed") {
            let state = if at.is_empty() {
                "in no state".to_string()
            } else {
                at.join(", ")
            };
            problems.push(format!("item {item:?} has a decay score but is {state}"));
        }
        let readable = raw.split_once(' ').is_some_and(|(s, r)| {
            s.parse::<f64>().is_ok_and(|s| s > 0.0 && s < 1.0)
                && r.parse::<u64>().is_ok_and(|r| r >= 1)
        });
        if !readable {
            problems.push(format!(
                "item {item:?} has a decay score {raw:?}, not \"SCORE RECLAIMS\" below 1"
            ));
        }
    }
    problems
}
