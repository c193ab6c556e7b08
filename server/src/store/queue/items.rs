//! Items: claiming and reporting done (adding: `add`; releasing: `release`; where one is:
//! `item_status`).

use super::{
    helpers::json_text,
    offload::DiskHit,
    scripts::{Batch, Refusal, Reply},
    StoreError, StoreResult,
};
use fred::prelude::*;
use serde::Deserialize;

/// One claim request, as the claim script checks it.
#[derive(Clone, Debug, Default)]
pub struct ClaimRequest {
    /// Downloader name (as sent).
    pub downloader: String,
    /// Client IP.
    pub ip: String,
    /// User agent.
    pub user_agent: String,
    /// Script version, empty when not sent.
    pub version: String,
    /// The most items wanted (1, or N of `multi=N`).
    pub n: usize,
    /// Whether the name is valid (checked after the version, as PROTOCOL.md orders it).
    pub name_ok: bool,
    /// Whether the IP or name is on the global block list.
    pub globally_blocked: bool,
    /// The pipeline whose token came with the claim, if one did.
    pub pipeline: Option<std::sync::Arc<super::people::pipelines::Pipeline>>,
}

/// What a claim request got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The items claimed (at least one), and for each the queue part it was handed out from
    /// (`todo`, `todo:secondary`, `todo#img`, ...): today's seesaw gives both to a grab
    /// script's `item_filter`.
    Items(Vec<String>, Vec<String>),
    /// Refused: [`Refusal::OldVersion`], [`Refusal::BadName`], [`Refusal::Blocked`],
    /// [`Refusal::TokenRequired`], [`Refusal::NotForPipeline`], [`Refusal::NotActive`],
    /// [`Refusal::Budget`], [`Refusal::RateLimited`] or [`Refusal::NothingToGive`].
    Refused(Refusal),
}

/// A done call, validated.
#[derive(Clone, Debug, Default)]
pub struct DoneReport {
    /// Downloader name.
    pub downloader: String,
    /// Script version.
    pub version: String,
    /// User agent.
    pub user_agent: String,
    /// Client IP.
    pub ip: String,
    /// The `id` field as JSON text (`null` when absent).
    pub id: String,
    /// Bytes per domain.
    pub bytes: Vec<(String, u64)>,
    /// The items (one, or a subset of a claimed batch).
    pub items: Vec<String>,
    /// The name of the pipeline whose token came with the report (empty: none).
    pub pipeline: String,
}

/// What a done report did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DoneOutcome {
    /// Items newly counted and duplicates ignored.
    Recorded {
        /// Items newly done.
        counted: u64,
        /// Items that were done already.
        duplicates: u64,
    },
    /// Refused: [`Refusal::Invalid`], [`Refusal::UnknownItem`], [`Refusal::NeverHandedOut`],
    /// [`Refusal::OtherPipeline`], [`Refusal::Overflow`] (nothing changed) or
    /// [`Refusal::DomainMismatch`] (the IP is blocked, the items released).
    Refused(Refusal),
}

/// A recorded done report, as `done.lua` answers it.
#[derive(Deserialize)]
struct Recorded {
    counted: u64,
    duplicates: u64,
}

/// The claim record of request `r`'s items up to its claim count, as `claim.lua` writes it:
/// `{"t":NOW,"d":…,"v":…,"ip":…,"ua":…[,"p":…],"n":` (t, d and v first: `done.lua` reads them
/// with one match). Made here, where it costs a fraction of what Lua's JSON and joins cost
/// Redis.
pub(in crate::store) fn claim_record_head(r: &ClaimRequest, now_ms: u64) -> String {
    let mut head = format!(
        r#"{{"t":{now_ms},"d":{},"v":{},"ip":{},"ua":{}"#,
        json_text(&r.downloader),
        json_text(&r.version),
        json_text(&r.ip),
        json_text(&r.user_agent)
    );
    if let Some(p) = r.pipeline.as_deref().filter(|p| !p.name.is_empty()) {
        head.push_str(r#","p":"#);
        head.push_str(&json_text(&p.name));
    }
    head.push_str(r#","n":"#);
    head
}

/// A report's bytes per domain as the completion log keeps them: `{"data":123}`.
fn bytes_json(bytes: &[(String, u64)]) -> String {
    let pairs: Vec<String> = bytes
        .iter()
        .map(|(domain, n)| format!("{}:{n}", json_text(domain)))
        .collect();
    format!("{{{}}}", pairs.join(","))
}

fn reply_err(script: &'static str, detail: impl std::fmt::Debug) -> StoreError {
    StoreError::Reply {
        script,
        detail: format!("{detail:?}"),
    }
}

/// Dones a second one address may send whose items must be looked up on disk (offloaded
/// items), and the burst: past it, 429 (docs/limits-and-security.md).
pub const DISK_LOOKUPS_PER_S: u64 = 20;
/// See [`DISK_LOOKUPS_PER_S`].
pub const DISK_LOOKUPS_BURST: u64 = 200;

impl super::Queue<'_> {
    /// Serves claim requests in one script call; `None` when there is no such project.
    pub async fn claim_batch(
        self,
        slug: &str,
        requests: &[ClaimRequest],
        now_ms: u64,
    ) -> StoreResult<Option<Vec<ClaimOutcome>>> {
        let k = self.keys.project(slug);
        let keys = k.claim_keys();
        let mut args = Vec::with_capacity(3 + 10 * requests.len());
        args.push(Value::from(now_ms as i64));
        args.push(Value::from(k.prefix()));
        args.push(Value::from(requests.len() as i64));
        for r in requests {
            args.push(Value::from(r.downloader.as_str()));
            args.push(Value::from(r.ip.as_str()));
            args.push(Value::from(claim_record_head(r, now_ms)));
            args.push(Value::from(r.version.as_str()));
            args.push(Value::from(r.n.max(1) as i64));
            args.push(Value::from(if r.name_ok { "1" } else { "0" }));
            args.push(Value::from(if r.globally_blocked { "1" } else { "0" }));
            let p = r.pipeline.as_deref();
            args.push(Value::from(p.map_or("", |p| p.name.as_str())));
            args.push(Value::from(p.map(|p| p.tags.join(",")).unwrap_or_default()));
            args.push(Value::from(if p.is_some_and(|p| p.match_only) {
                "1"
            } else {
                "0"
            }));
        }
        let replies = match self
            .scripts
            .call::<Batch<Reply<(Vec<String>, Vec<String>)>>>(
                self.pool.next(),
                &self.scripts.claim,
                keys,
                args,
            )
            .await?
        {
            Ok(Batch(replies)) => replies,
            Err(Refusal::NoProject) => return Ok(None),
            Err(other) => return Err(StoreError::Refused(other)),
        };
        if replies.len() != requests.len() {
            return Err(reply_err(
                "claim",
                format!("{} answers to {} requests", replies.len(), requests.len()),
            ));
        }
        let mut out = Vec::with_capacity(replies.len());
        for reply in replies {
            out.push(match reply.into_result() {
                Ok((items, queues)) if items.len() == queues.len() => {
                    ClaimOutcome::Items(items, queues)
                }
                Ok((items, queues)) => {
                    return Err(reply_err(
                        "claim",
                        format!("{} items with {} queue parts", items.len(), queues.len()),
                    ))
                }
                Err(refusal) => ClaimOutcome::Refused(refusal),
            });
        }
        Ok(Some(out))
    }

    /// Claims up to `n` items for one request (see [`crate::store::queue::Queue::claim_batch`]).
    pub async fn claim(
        self,
        slug: &str,
        request: &ClaimRequest,
        now_ms: u64,
    ) -> StoreResult<ClaimOutcome> {
        match self
            .claim_batch(slug, std::slice::from_ref(request), now_ms)
            .await?
        {
            Some(mut v) if v.len() == 1 => Ok(v.remove(0)),
            Some(v) => Err(reply_err("claim", v)),
            None => Err(StoreError::NoProject),
        }
    }

    /// Records done reports in one script call. A report refused for an unknown item that is
    /// done on disk (offloaded, or passing a discard filter) is recorded again without its
    /// items on disk, which count as duplicates.
    pub async fn done_batch(
        self,
        slug: &str,
        reports: &[DoneReport],
        now_ms: u64,
    ) -> StoreResult<Vec<DoneOutcome>> {
        let mut out = self.done_batch_once(slug, reports, now_ms).await?;
        for (i, outcome) in out.iter_mut().enumerate() {
            if !matches!(outcome, DoneOutcome::Refused(Refusal::UnknownItem { .. })) {
                continue;
            }
            let report = &reports[i];
            // Each address may send so many dones a second that need the disk.
            if let Err(wait) = self.slice::<super::offload::DiskCache>().lookups.check(
                &report.ip,
                DISK_LOOKUPS_PER_S,
                DISK_LOOKUPS_BURST,
                std::time::Instant::now(),
            ) {
                *outcome = DoneOutcome::Refused(Refusal::RateLimited {
                    wait_ms: wait.as_millis().max(1) as u64,
                });
                continue;
            }
            let (_, on_disk) = self.offload().find_on_disk(slug, &report.items).await?;
            let done_on_disk = |item: &String| {
                matches!(
                    on_disk.get(item),
                    Some(DiskHit::Done { .. } | DiskHit::Discarded)
                )
            };
            // None on disk is no proof of unknown: the item may be back in Redis meanwhile (a
            // Redis restarted without its last second of writes undoes an offload's commit
            // between the two reads), so the report is run again on what is not on disk.
            let old = report.items.iter().filter(|i| done_on_disk(i)).count() as u64;
            let rest: Vec<String> = report
                .items
                .iter()
                .filter(|i| !done_on_disk(i))
                .cloned()
                .collect();
            *outcome = if rest.is_empty() {
                DoneOutcome::Recorded {
                    counted: 0,
                    duplicates: old,
                }
            } else {
                let again = DoneReport {
                    items: rest,
                    ..report.clone()
                };
                match self.done_batch_once(slug, &[again], now_ms).await?.pop() {
                    Some(DoneOutcome::Recorded {
                        counted,
                        duplicates,
                    }) => DoneOutcome::Recorded {
                        counted,
                        duplicates: duplicates + old,
                    },
                    Some(other) => other,
                    None => return Err(reply_err("done", "no answer")),
                }
            };
        }
        Ok(out)
    }

    async fn done_batch_once(
        self,
        slug: &str,
        reports: &[DoneReport],
        now_ms: u64,
    ) -> StoreResult<Vec<DoneOutcome>> {
        let k = self.keys.project(slug);
        let month = app::model::month_name(now_ms);
        let keys = k.done_keys();
        let mut args = vec![
            Value::from(now_ms as i64),
            Value::from(k.prefix()),
            Value::from(reports.len() as i64),
        ];
        for r in reports {
            args.push(Value::from(r.downloader.as_str()));
            args.push(Value::from(r.version.as_str()));
            args.push(Value::from(r.user_agent.as_str()));
            args.push(Value::from(r.ip.as_str()));
            args.push(Value::from(if r.id.is_empty() {
                "null"
            } else {
                r.id.as_str()
            }));
            args.push(Value::from(r.pipeline.as_str()));
            args.push(Value::from(bytes_json(&r.bytes)));
            args.push(Value::from(r.bytes.len() as i64));
            for (domain, bytes) in &r.bytes {
                args.push(Value::from(domain.as_str()));
                args.push(Value::from(bytes.to_string()));
            }
            args.push(Value::from(r.items.len() as i64));
            args.extend(r.items.iter().map(|s| Value::from(s.as_str())));
        }
        let Batch(replies) = self
            .scripts
            .call::<Batch<Reply<Recorded>>>(self.pool.next(), &self.scripts.done, keys, args)
            .await?
            .map_err(StoreError::Refused)?;
        let out: Vec<DoneOutcome> = replies
            .into_iter()
            .map(|r| match r.into_result() {
                Ok(Recorded {
                    counted,
                    duplicates,
                }) => DoneOutcome::Recorded {
                    counted,
                    duplicates,
                },
                Err(refusal) => DoneOutcome::Refused(refusal),
            })
            .collect();
        if out.len() != reports.len() {
            return Err(reply_err(
                "done",
                format!("{} answers to {} reports", out.len(), reports.len()),
            ));
        }
        if out
            .iter()
            .any(|o| matches!(o, DoneOutcome::Recorded { counted, .. } if *counted > 0))
        {
            self.figures().note_fold(slug);
        }
        // The global monthly count is written outside the script (another cluster slot).
        self.figures().note_contributors(
            &month,
            reports.iter().zip(&out).filter_map(|(r, o)| {
                matches!(o, DoneOutcome::Recorded { counted, .. } if *counted > 0)
                    .then_some(r.downloader.as_str())
            }),
        );
        Ok(out)
    }

    /// Records one done report (see [`crate::store::queue::Queue::done_batch`]).
    pub async fn done(
        self,
        slug: &str,
        report: &DoneReport,
        now_ms: u64,
    ) -> StoreResult<DoneOutcome> {
        let mut v = self
            .done_batch(slug, std::slice::from_ref(report), now_ms)
            .await?;
        v.pop().ok_or_else(|| reply_err("done", "no answer"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_record_head_puts_t_d_and_v_first_and_escapes_every_text() {
        let mut r = ClaimRequest {
            downloader: "alice".into(),
            ip: "192.0.2.1".into(),
            user_agent: "Warrior \"3\"/1 \\ x".into(),
            version: "20240101.01".into(),
            n: 1,
            ..ClaimRequest::default()
        };
        let head = claim_record_head(&r, 1_700_000_000_000);
        assert_eq!(
            head,
            r#"{"t":1700000000000,"d":"alice","v":"20240101.01","ip":"192.0.2.1","ua":"Warrior \"3\"/1 \\ x","n":"#
        );
        // claim.lua appends the count (and `q`, `r`): the whole is a record serde reads back.
        let record: serde_json::Value = serde_json::from_str(&format!("{head}2}}")).unwrap();
        assert_eq!(record["ua"], "Warrior \"3\"/1 \\ x");
        assert_eq!(record["n"], 2);
        r.pipeline = Some(std::sync::Arc::new(
            super::super::people::pipelines::Pipeline {
                name: "p\"1".into(),
                tags: vec![],
                match_only: false,
                t: 0,
            },
        ));
        assert!(
            claim_record_head(&r, 5).ends_with(r#","ua":"Warrior \"3\"/1 \\ x","p":"p\"1","n":"#)
        );
    }

    #[test]
    fn bytes_json_is_the_object_the_log_keeps() {
        assert_eq!(bytes_json(&[]), "{}");
        let pairs = [("data".to_string(), 123), ("a\"b".to_string(), 0)];
        assert_eq!(bytes_json(&pairs), r#"{"data":123,"a\"b":0}"#);
    }
}
