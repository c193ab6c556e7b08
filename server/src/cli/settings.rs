//! Settings from the command line: `KEY=VALUE` changes, and the checks every saved setting passes.

use super::CliError;
use crate::store::Settings;

/// The most backfeed shards a project may declare.
const MAX_SHARDS: usize = 64;

/// Applies `KEY=VALUE` changes to `settings`, validating the result.
pub fn apply_changes(settings: &Settings, changes: &[String]) -> Result<Settings, CliError> {
    let mut value = serde_json::to_value(settings).map_err(|e| CliError::Usage(e.to_string()))?;
    for change in changes {
        let (key, raw) = change
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("expected KEY=VALUE, got {change:?}")))?;
        let slot = value
            .get_mut(key)
            .ok_or_else(|| CliError::Usage(format!("unknown setting {key:?}")))?;
        *slot = match slot {
            serde_json::Value::String(_) => serde_json::Value::String(raw.to_string()),
            serde_json::Value::Array(_) if !raw.trim_start().starts_with('[') => raw
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| serde_json::Value::String(s.to_string()))
                .collect(),
            _ => serde_json::from_str(raw).map_err(|e| CliError::Usage(format!("{key}: {e}")))?,
        };
    }
    let updated: Settings =
        serde_json::from_value(value).map_err(|e| CliError::Usage(e.to_string()))?;
    validate_settings(&updated).map_err(CliError::Usage)?;
    Ok(updated)
}

/// Why `s` cannot be saved, if it cannot.
pub fn validate_settings(s: &Settings) -> Result<(), String> {
    if !["active", "paused", "draining", "finished"].contains(&s.state.as_str()) {
        return Err(format!(
            "state must be active, paused, draining or finished, not {:?}",
            s.state
        ));
    }
    if s.rate < 0.0 || s.burst < 0.0 || !s.rate.is_finite() || !s.burst.is_finite() {
        return Err("rate and burst must be non-negative".into());
    }
    if s.domains
        .iter()
        .any(|d| d.is_empty() || d.len() > 64 || d.contains([',', '"', '\\']))
    {
        return Err("domains must be 1 to 64 characters, without , \" or \\".into());
    }
    if !s.item_pattern.is_empty() {
        regex::Regex::new(&s.item_pattern).map_err(|e| format!("item_pattern: {e}"))?;
    }
    if !s.backfeed_key.is_empty() && !s.backfeed_key.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err("backfeed_key must be letters and digits".into());
    }
    if s.backfeed_shards.len() > MAX_SHARDS {
        return Err(format!("at most {MAX_SHARDS} backfeed_shards"));
    }
    for (i, shard) in s.backfeed_shards.iter().enumerate() {
        if !crate::store::valid_part_name(shard) {
            return Err(format!(
                "backfeed shard {shard:?} must be [a-z0-9_-]{{1,32}}"
            ));
        }
        if s.backfeed_shards[..i].contains(shard) {
            return Err(format!("backfeed shard {shard:?} is listed twice"));
        }
    }
    for p in &s.pattern_limits {
        if !crate::store::valid_part_name(&p.name) {
            return Err(format!(
                "pattern limit name {:?} must be [a-z0-9_-]{{1,32}}",
                p.name
            ));
        }
        regex::Regex::new(&p.pattern).map_err(|e| format!("pattern limit {}: {e}", p.name))?;
        if !(p.rate > 0.0 && p.rate.is_finite()) {
            return Err(format!("pattern limit {}: rate must be positive", p.name));
        }
    }
    Ok(())
}
