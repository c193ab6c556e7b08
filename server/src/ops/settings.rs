//! A project's settings: the checks every saved setting passes (from the panel or the command
//! line alike), `KEY=VALUE` changes, and saving with an audit entry naming what changed.

use super::{invalid, Actor, OpsResult};
use crate::store::{valid_part_name, Settings, Store};

/// The most backfeed keys one project takes (one per grab script that feeds it).
pub const MAX_BACKFEED_KEYS: usize = 16;
/// The longest `shard_pattern`.
pub const MAX_SHARD_PATTERN: usize = 256;

/// The most backfeed shards a project may declare.
const MAX_SHARDS: usize = 64;

/// Settings that passed [`validate_settings`] (the title trimmed): the only ones [`save`]
/// takes.
#[derive(Clone, Debug)]
pub struct Checked(Settings);

impl Checked {
    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.0
    }
}

/// `settings` with the title trimmed, if they pass every check.
pub fn check(mut settings: Settings) -> OpsResult<Checked> {
    settings.title = settings.title.trim().to_string();
    validate_settings(&settings).map_err(invalid)?;
    Ok(Checked(settings))
}

/// Applies `KEY=VALUE` changes to `settings` and checks the result: a string setting takes
/// the value as it is, a list a comma-separated value (or JSON), anything else JSON.
pub fn apply_changes(settings: &Settings, changes: &[String]) -> OpsResult<Checked> {
    let mut value = serde_json::to_value(settings).map_err(|e| invalid(e.to_string()))?;
    for change in changes {
        let (key, raw) = change
            .split_once('=')
            .ok_or_else(|| invalid(format!("expected KEY=VALUE, got {change:?}")))?;
        let slot = value
            .get_mut(key)
            .ok_or_else(|| invalid(format!("unknown setting {key:?}")))?;
        *slot = match slot {
            serde_json::Value::String(_) => serde_json::Value::String(raw.to_string()),
            serde_json::Value::Array(_) if !raw.trim_start().starts_with('[') => raw
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| serde_json::Value::String(s.to_string()))
                .collect(),
            _ => serde_json::from_str(raw).map_err(|e| invalid(format!("{key}: {e}")))?,
        };
    }
    check(serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?)
}

/// Saves the checked settings of project `slug` (whose settings were `before`), audited as
/// `settings.save` with the names of the settings that changed.
pub async fn save(
    store: &Store,
    actor: &Actor,
    slug: &str,
    before: &Settings,
    settings: &Checked,
) -> OpsResult<()> {
    store.projects().save_settings(slug, &settings.0).await?;
    let changed = changed_fields(before, &settings.0);
    actor
        .record(store, "settings.save", slug, 0, changed)
        .await?;
    Ok(())
}

/// Why a title cannot be saved, if it cannot.
pub fn title_problem(title: &str) -> Option<String> {
    (title.is_empty() || title.len() > 200).then(|| "The title is 1 to 200 characters.".into())
}

/// Why byte domains cannot be saved, if they cannot.
pub fn domains_problem(domains: &[String]) -> Option<String> {
    if domains.is_empty() {
        return Some("domains: at least one byte domain (e.g. data)".into());
    }
    domains
        .iter()
        .any(|d| d.is_empty() || d.len() > 64 || d.contains([',', '"', '\\']))
        .then(|| "domains must be 1 to 64 characters, without , \" or \\".into())
}

/// Why `s` cannot be saved, if it cannot: each setting of the codec
/// ([`app::model::admin::SETTING_FIELDS`], which already parsed its type) judged by its check
/// in [`CHECKS`], in the codec's order.
pub fn validate_settings(s: &Settings) -> Result<(), String> {
    for field in &app::model::admin::SETTING_FIELDS {
        if let Some((_, check)) = CHECKS.iter().find(|(name, _)| *name == field.name) {
            check(s)?;
        }
    }
    Ok(())
}

/// A rule a setting's value must follow (ranges, patterns, rules between settings), beyond its
/// type.
type Check = fn(&Settings) -> Result<(), String>;

/// Any value of its type will do.
fn any(_: &Settings) -> Result<(), String> {
    Ok(())
}

/// Each setting's check, by its codec name; a test requires one for every setting.
const CHECKS: [(&str, Check); 30] = [
    ("title", |s| title_problem(&s.title).map_or(Ok(()), Err)),
    ("banner", any),
    ("domains", |s| {
        domains_problem(&s.domains).map_or(Ok(()), Err)
    }),
    ("item_pattern", check_item_pattern),
    ("min_version", |s| {
        if s.min_version.len() > 64 {
            return Err("min_version is at most 64 characters".into());
        }
        Ok(())
    }),
    ("rate", check_rate),
    ("burst", check_rate),
    ("dl_max_claims", any),
    ("claims_limit", any),
    ("reclaim_ttl", any),
    ("max_attempts", any),
    ("auto_block_ttl", any),
    ("bloom_capacity", |s| {
        if s.bloom_capacity == 0 {
            return Err("bloom_capacity must be at least 1".into());
        }
        Ok(())
    }),
    ("backfeed_shards", |s| check_shards(&s.backfeed_shards)),
    ("shard_pattern", check_shard_pattern),
    ("tags", |s| {
        crate::store::tags_problem(&s.tags).map_or(Ok(()), Err)
    }),
    ("offload_keep", check_offload),
    ("queue_high", check_offload),
    ("segment_items", check_offload),
    ("log_keep", check_offload),
    ("state", check_state),
    ("decay_factor", |s| {
        check_decay(s.decay_factor, s.decay_threshold)
    }),
    ("decay_threshold", |s| {
        check_decay(s.decay_factor, s.decay_threshold)
    }),
    ("fifo", any),
    ("ignore_global_blocks", any),
    ("require_token", any),
    ("done_policy", check_offload),
    ("backfeed_key", check_backfeed_key),
    ("extra", check_extra),
    ("pattern_limits", check_pattern_limits),
];

/// One the operator sets: `active`, `paused` or `aborted`.
fn check_state(s: &Settings) -> Result<(), String> {
    if !app::model::lifecycle::SETTABLE.contains(&s.state.as_str()) {
        let derived = if ["draining", "finished"].contains(&s.state.as_str()) {
            " (draining and finished follow from the counts by themselves)"
        } else {
            ""
        };
        return Err(format!(
            "state must be active, paused or aborted, not {:?}{derived}",
            s.state
        ));
    }
    Ok(())
}

fn check_rate(s: &Settings) -> Result<(), String> {
    if s.rate < 0.0 || s.burst < 0.0 || !s.rate.is_finite() || !s.burst.is_finite() {
        return Err("rate and burst must be non-negative".into());
    }
    Ok(())
}

fn check_item_pattern(s: &Settings) -> Result<(), String> {
    if !s.item_pattern.is_empty() {
        regex::Regex::new(&s.item_pattern).map_err(|e| format!("item_pattern: {e}"))?;
    }
    Ok(())
}

fn check_shard_pattern(s: &Settings) -> Result<(), String> {
    if s.shard_pattern.len() > MAX_SHARD_PATTERN {
        return Err(format!(
            "shard_pattern is at most {MAX_SHARD_PATTERN} characters"
        ));
    }
    if !s.shard_pattern.is_empty() {
        regex::RegexBuilder::new(&format!("^(?:{})$", s.shard_pattern))
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("shard_pattern: {e}"))?;
    }
    Ok(())
}

fn check_backfeed_key(s: &Settings) -> Result<(), String> {
    if !s.backfeed_key.is_empty() {
        let keys: Vec<&str> = s.backfeed_key.split(',').collect();
        if keys.len() > MAX_BACKFEED_KEYS
            || keys
                .iter()
                .any(|k| k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            return Err(format!(
                "backfeed_key is 1 to {MAX_BACKFEED_KEYS} keys of letters and digits, comma-separated"
            ));
        }
    }
    Ok(())
}

/// Score decay: a factor of 0 (off) or strictly between 0 and 1, and a threshold strictly
/// between 0 and 1.
fn check_decay(factor: f64, threshold: f64) -> Result<(), String> {
    let inside = |x: f64| x > 0.0 && x < 1.0;
    if !(factor == 0.0 || inside(factor)) {
        return Err(format!(
            "decay_factor must be 0 (off) or between 0 and 1 (e.g. 0.8), not {factor}"
        ));
    }
    if !inside(threshold) {
        return Err(format!(
            "decay_threshold must be between 0 and 1 (e.g. 0.005), not {threshold}"
        ));
    }
    Ok(())
}

/// The big-project settings: a known done policy, and marks that leave the offloader room
/// to move whole segments between them.
fn check_offload(s: &Settings) -> Result<(), String> {
    if !app::model::admin::DONE_POLICIES.contains(&s.done_policy.as_str()) {
        return Err(format!(
            "done_policy must be keep, offload or discard, not {:?}",
            s.done_policy
        ));
    }
    // A segment's items go to Redis and back in one script call each: at 4 KiB a name, 100,000
    // of them are 400 MiB, which is already a long pause for Redis.
    if !(1_000..=crate::store::offload::offloader::MAX_SEGMENT_ITEMS).contains(&s.segment_items) {
        return Err(format!(
            "segment_items must be from 1000 to {}, not {}",
            crate::store::offload::offloader::MAX_SEGMENT_ITEMS,
            s.segment_items
        ));
    }
    if s.offload_keep > 1_000_000_000 {
        return Err("offload_keep is at most 1000000000".into());
    }
    if s.queue_high != 0 && (s.queue_high < 2 * s.segment_items || s.queue_high > 1_000_000_000) {
        return Err(format!(
            "queue_high must be 0 (no mark) or from twice segment_items ({}) to 1000000000, not {}",
            2 * s.segment_items,
            s.queue_high
        ));
    }
    let cap = crate::keys::LOG_LEN as u64 * 9 / 10;
    if !(1_000..=cap).contains(&s.log_keep) {
        return Err(format!(
            "log_keep must be from 1000 to {cap} (the log's cap in Redis is {}), not {}",
            crate::keys::LOG_LEN,
            s.log_keep
        ));
    }
    Ok(())
}

fn check_shards(shards: &[String]) -> Result<(), String> {
    if shards.len() > MAX_SHARDS {
        return Err(format!("at most {MAX_SHARDS} backfeed_shards"));
    }
    for (i, shard) in shards.iter().enumerate() {
        if !valid_part_name(shard) {
            return Err(format!(
                "backfeed shard {shard:?} must be [a-z0-9_-]{{1,32}}"
            ));
        }
        if shards[..i].contains(shard) {
            return Err(format!("backfeed shard {shard:?} is listed twice"));
        }
    }
    Ok(())
}

fn check_pattern_limits(s: &Settings) -> Result<(), String> {
    for p in &s.pattern_limits {
        if !valid_part_name(&p.name) {
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
    let mut names: Vec<&str> = s.pattern_limits.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err("pattern limit names must differ".into());
    }
    Ok(())
}

/// The extra fields a claim carries: named like claim fields, none hiding the claim's own.
fn check_extra(s: &Settings) -> Result<(), String> {
    for (k, v) in &s.extra {
        if k.is_empty()
            || k.len() > 64
            || !k
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
        {
            return Err(format!(
                "extra field name {k:?} must be 1 to 64 of a-z, 0-9, '_' and '-'"
            ));
        }
        if ["item_name", "items"].contains(&k.as_str()) {
            return Err(format!(
                "extra field {k:?} would hide the claim's own field"
            ));
        }
        if v.len() > 4096 {
            return Err(format!("extra field {k}: at most 4096 characters"));
        }
    }
    Ok(())
}

/// The names of the settings that differ.
fn changed_fields(a: &Settings, b: &Settings) -> String {
    let (a, b) = (
        serde_json::to_value(a).unwrap_or_default(),
        serde_json::to_value(b).unwrap_or_default(),
    );
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return String::new();
    };
    a.iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_of_the_codec_has_one_check() {
        let fields: Vec<&str> = app::model::admin::SETTING_FIELDS
            .iter()
            .map(|f| f.name)
            .collect();
        for (name, _) in CHECKS {
            assert!(fields.contains(&name), "{name} is no setting");
        }
        for name in &fields {
            let n = CHECKS.iter().filter(|(c, _)| c == name).count();
            assert_eq!(n, 1, "{name} has {n} checks");
        }
        let mut bad = app::model::admin::default_settings();
        bad.title = "T".into();
        bad.domains = vec!["data".into()];
        assert_eq!(validate_settings(&bad), Ok(()));
        bad.segment_items = 1;
        assert!(validate_settings(&bad)
            .unwrap_err()
            .contains("segment_items"));
        // One script call per segment: a million names of 4 KiB would hold Redis for gigabytes.
        bad.segment_items = 1_000_000;
        bad.queue_high = 0;
        assert!(validate_settings(&bad).unwrap_err().contains("100000"));
        bad.segment_items = 100_000;
        assert_eq!(validate_settings(&bad), Ok(()));
    }
}
