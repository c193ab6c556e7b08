//! The warriors' three calls, as seesaw makes them: a claim, a done retried until `OK`, and
//! (for a late reporter) the status of an item it holds.

use super::{Phase, Shared, CLAIMS, HANDED, MAX_BACKOFF, REPORTED, REPORTS};
use crate::chaos::SLUG;
use std::time::Duration;

impl Shared {
    fn base(&self) -> &str {
        &self.bases[rand::random_range(0..self.bases.len())]
    }

    /// Sleeps after a refusal: `Retry-After`, capped, with jitter; `floor` without one.
    async fn back_off(&self, retry_after: Option<u64>, floor: Duration) {
        let wait = retry_after
            .map(|s| Duration::from_secs(s).min(MAX_BACKOFF))
            .unwrap_or(floor);
        let jitter = rand::random_range(0.5..1.0);
        tokio::time::sleep(wait.mul_f64(jitter)).await;
    }

    /// Counts a transport error of `call`.
    fn transport_error(&self, call: &str, e: &reqwest::Error) {
        let kind = if e.is_timeout() {
            "timeout"
        } else if e.is_connect() {
            "connection refused"
        } else {
            "connection lost"
        };
        self.error(format!("{call}: {kind}"));
    }

    /// One claim of `n` items for `who`: the items; none when there was nothing to give or
    /// the call failed (after a backoff).
    pub(super) async fn claim(&self, who: &str, n: usize) -> Vec<String> {
        let path = if n == 1 {
            format!("/{SLUG}/request")
        } else {
            format!("/{SLUG}/multi={n}//request")
        };
        let body = serde_json::json!({"downloader": who, "api_version": "2", "version": "1"});
        let reply = self
            .http
            .post(format!("{}{path}", self.base()))
            .body(body.to_string())
            .send()
            .await;
        let r = match reply {
            Ok(r) => r,
            Err(e) => {
                self.transport_error("claim", &e);
                self.back_off(None, Duration::from_millis(50)).await;
                return vec![];
            }
        };
        let status = r.status().as_u16();
        let retry_after = retry_after(&r);
        let text = match r.text().await {
            Ok(t) => t,
            Err(e) => {
                // The claim may have been made: it comes back by reclaim.
                self.transport_error("claim body", &e);
                return vec![];
            }
        };
        match status {
            200 => {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                let Some(joined) = v["item_name"].as_str() else {
                    self.problem(format!("a claim answered 200 without item_name: {text}"));
                    return vec![];
                };
                let items: Vec<String> = joined.split('\0').map(String::from).collect();
                self.count(CLAIMS, 1);
                self.count(HANDED, items.len() as u64);
                items
            }
            404 if text.starts_with("No item") => {
                self.back_off(None, Duration::from_millis(400)).await;
                vec![]
            }
            503 | 429 => {
                self.error(format!("claim: {status}"));
                self.back_off(retry_after, Duration::from_millis(200)).await;
                vec![]
            }
            _ => {
                self.error(format!("claim: {status}"));
                self.problem(format!("a claim answered {status}: {}", text.trim()));
                self.back_off(None, Duration::from_millis(200)).await;
                vec![]
            }
        }
    }

    /// Reports `items` done for `who` until it is told `OK` (true), or the tracker answers
    /// what it never should, or the run is aborted (false).
    pub(super) async fn done(&self, who: &str, items: &[String]) -> bool {
        let body = serde_json::json!({
            "downloader": who, "version": "1", "item": items.join("\0"),
            "bytes": {"data": 100 * items.len()}, "id": {"run": "chaos"},
        })
        .to_string();
        while self.phase() != Phase::Abort {
            let reply = self
                .http
                .post(format!("{}/{SLUG}/done", self.base()))
                .body(body.clone())
                .send()
                .await;
            let r = match reply {
                Ok(r) => r,
                Err(e) => {
                    self.transport_error("done", &e);
                    self.back_off(None, Duration::from_millis(50)).await;
                    continue;
                }
            };
            let status = r.status().as_u16();
            let retry_after = retry_after(&r);
            let text = match r.text().await {
                Ok(t) => t,
                Err(e) => {
                    self.transport_error("done body", &e);
                    continue;
                }
            };
            match status {
                200 if text.trim() == "OK" => {
                    self.count(REPORTS, 1);
                    self.count(REPORTED, items.len() as u64);
                    return true;
                }
                503 | 429 => {
                    self.error(format!("done: {status}"));
                    self.back_off(retry_after, Duration::from_millis(200)).await;
                }
                _ => {
                    self.error(format!("done: {status}"));
                    self.problem(format!(
                        "a done of {} items by {who} answered {status}: {}",
                        items.len(),
                        text.trim()
                    ));
                    return false;
                }
            }
        }
        false
    }

    /// Whether `item` is still claimed by `who` (`None`: could not tell now).
    pub(super) async fn still_mine(&self, item: &str, who: &str) -> Option<bool> {
        let r = self
            .http
            .get(format!("{}/{SLUG}/items/{item}.json", self.base()))
            .send()
            .await
            .ok()?;
        if r.status() != 200 {
            return None;
        }
        let v: serde_json::Value = r.json().await.ok()?;
        Some(v["status"] == "out" && v["downloader"] == who)
    }
}

fn retry_after(r: &reqwest::Response) -> Option<u64> {
    r.headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}
