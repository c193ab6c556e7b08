//! Admin accounts, the one-time setup token, login attempt counters and the audit log.

use super::{
    scripts::{Accepted, Refusal},
    Store, StoreError, StoreResult,
};
use crate::keys::AUDIT_LEN;
use fred::prelude::*;
use fred::types::Expiration;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use app::model::admin::AccountInfo;
pub use app::model::admin::{AuditEntry, Role};

/// An admin account as stored (`hash` is an argon2id PHC string).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Account {
    /// Lowercase name.
    pub name: String,
    /// The password hash; never sent to clients.
    #[serde(skip_serializing)]
    pub hash: String,
    /// What it may do.
    pub role: Role,
    /// The projects a `Project` account administers.
    pub projects: Vec<String>,
    /// Created (ms).
    pub t: u64,
    /// Session generation: new with every password, and kept in the sessions logged in with
    /// it, so that setting a password (or deleting and re-creating the account) ends them.
    #[serde(skip_serializing, default)]
    pub gen: u64,
}

impl Account {
    /// The account as the admin API shows it (no password hash).
    pub fn info(&self) -> AccountInfo {
        AccountInfo {
            name: self.name.clone(),
            role: self.role,
            projects: self.projects.clone(),
            t: self.t,
        }
    }

    /// Sets the password hash, ending the sessions logged in with the old password.
    pub fn set_password_hash(&mut self, hash: String) {
        self.hash = hash;
        self.gen = new_session_gen();
    }
}

/// A fresh session generation (random, so that a re-created account shares none with its
/// namesake's sessions).
pub fn new_session_gen() -> u64 {
    // Never 0: that is the generation of accounts and sessions from before generations.
    rand::random::<u64>().max(1)
}

/// Whether `name` may name an account: 1 to 32 of `a-z0-9._-` (after lowercasing).
pub fn valid_user_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// Names the audit log, the block lists and item timelines give to actors that are no account:
/// `cli` (the command line), `api-token` (`TRACKER_ADMIN_TOKEN`), `auto` (automatic blocks),
/// `-` (nobody, in timelines), `tracker` (what the tracker does by itself, such as choosing
/// `auto_project`), and `setup`, `system`, `admin` kept for such uses. No account
/// may take one, so no entry can be mistaken for another's.
pub const RESERVED_USER_NAMES: [&str; 8] = [
    "cli",
    "api-token",
    "auto",
    "-",
    "setup",
    "system",
    "admin",
    "tracker",
];

/// Why `name` (lowercase) cannot name a new account, if it cannot.
pub fn user_name_problem(name: &str) -> Option<String> {
    if !valid_user_name(name) {
        return Some("Names are 1 to 32 of a-z, 0-9, '.', '_', '-'.".into());
    }
    RESERVED_USER_NAMES
        .contains(&name)
        .then(|| format!("{name:?} is reserved: the logs use it for actors that are no account."))
}

/// The audit name of actions taken with the `tracker` command line.
pub const CLI_ACTOR: &str = "cli";

/// A login counter's answer: nothing to wait, or the whole seconds (at least 1) until the full
/// counter lapses.
fn wait_of(reply: Result<Accepted, Refusal>) -> StoreResult<Option<u64>> {
    match reply {
        Ok(Accepted {}) => Ok(None),
        Err(Refusal::RateLimited { wait_ms }) => Ok(Some(wait_ms.div_ceil(1000).max(1))),
        Err(refusal) => Err(StoreError::Refused(refusal)),
    }
}

/// Browsers remembered per account for the login limits ([`crate::store::people::People::remember_device`]).
pub const MAX_DEVICES: usize = 10;
/// Days a browser stays remembered after its last login.
pub const DEVICE_DAYS: u64 = 180;

/// Who does an action, as the audit log names them.
#[derive(Clone, Debug)]
pub struct Actor {
    /// An account name, `api-token`, or [`CLI_ACTOR`].
    pub name: String,
    /// The id of the account's API token the action came with, if any.
    pub token: Option<String>,
}

impl Actor {
    /// The `tracker` command line.
    pub fn cli() -> Self {
        Actor {
            name: CLI_ACTOR.into(),
            token: None,
        }
    }

    /// Records an action in the audit log (with `[token ID]` when it came with a token).
    pub async fn record(
        &self,
        store: &Store,
        action: &str,
        project: &str,
        count: u64,
        detail: impl Into<String>,
    ) -> StoreResult<()> {
        let mut detail = detail.into();
        if let Some(id) = &self.token {
            detail = format!("{detail} [token {id}]").trim_start().to_string();
        }
        store
            .people()
            .audit(&AuditEntry {
                t: super::now_ms(),
                who: self.name.clone(),
                action: action.into(),
                project: project.into(),
                count,
                detail,
            })
            .await
    }
}

impl super::People<'_> {
    /// Creates an account; `Ok(false)` if the name is taken.
    pub async fn create_account(self, account: &Account) -> StoreResult<bool> {
        let client = self.pool.next();
        let added: u64 = client
            .sadd(self.keys.admin_users(), account.name.as_str())
            .await?;
        if added == 0 {
            return Ok(false);
        }
        self.save_account(account).await?;
        let _: () = client.del(self.keys.admin_setup()).await?;
        Ok(true)
    }

    /// Writes an existing account's fields.
    pub async fn save_account(self, a: &Account) -> StoreResult<()> {
        let fields = vec![
            ("hash", a.hash.clone()),
            ("role", a.role.as_str().to_string()),
            (
                "projects",
                serde_json::to_string(&a.projects).unwrap_or_default(),
            ),
            ("t", a.t.to_string()),
            ("gen", a.gen.to_string()),
        ];
        let _: () = self
            .pool
            .next()
            .hset(self.keys.admin_user(&a.name), fields)
            .await?;
        Ok(())
    }

    /// The account called `name` (lowercase), if any.
    pub async fn account(self, name: &str) -> StoreResult<Option<Account>> {
        let h: HashMap<String, String> =
            self.pool.next().hgetall(self.keys.admin_user(name)).await?;
        let (Some(hash), Some(role)) = (h.get("hash"), h.get("role").and_then(|r| Role::parse(r)))
        else {
            return Ok(None);
        };
        Ok(Some(Account {
            name: name.to_string(),
            hash: hash.clone(),
            role,
            projects: h
                .get("projects")
                .and_then(|p| serde_json::from_str(p).ok())
                .unwrap_or_default(),
            t: h.get("t").and_then(|t| t.parse().ok()).unwrap_or(0),
            gen: h.get("gen").and_then(|g| g.parse().ok()).unwrap_or(0),
        }))
    }

    /// Every account, by name.
    pub async fn accounts(self) -> StoreResult<Vec<Account>> {
        let mut names: Vec<String> = self.pool.next().smembers(self.keys.admin_users()).await?;
        names.sort();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            if let Some(a) = self.account(&name).await? {
                out.push(a);
            }
        }
        Ok(out)
    }

    /// How many accounts exist.
    pub async fn account_count(self) -> StoreResult<u64> {
        Ok(self.pool.next().scard(self.keys.admin_users()).await?)
    }

    /// Deletes an account; whether it existed.
    pub async fn delete_account(self, name: &str) -> StoreResult<bool> {
        let client = self.pool.next();
        let n: u64 = client.srem(self.keys.admin_users(), name).await?;
        let _: () = client.del(self.keys.admin_user(name)).await?;
        self.forget_devices(name).await?;
        Ok(n > 0)
    }

    /// Stores the one-time setup token (replacing an older one), valid for a day.
    pub async fn set_setup_token(self, token: &str) -> StoreResult<()> {
        let _: () = self
            .pool
            .next()
            .set(
                self.keys.admin_setup(),
                token,
                Some(Expiration::EX(86_400)),
                None,
                false,
            )
            .await?;
        Ok(())
    }

    /// The setup token, while one is pending.
    pub async fn setup_token(self) -> StoreResult<Option<String>> {
        Ok(self.pool.next().get(self.keys.admin_setup()).await?)
    }

    /// Counts a login attempt of `name` from network `net` before its password is checked,
    /// unless `max_pair` attempts of the pair or `max_net` of the network were counted in the
    /// last `window_s` seconds: then the seconds until that counter lapses.
    pub async fn login_attempt(
        self,
        name: &str,
        net: &str,
        (max_pair, max_net): (u64, u64),
        window_s: u64,
    ) -> StoreResult<Option<u64>> {
        let reply = self
            .scripts
            .call::<Accepted>(
                self.pool.next(),
                &self.scripts.login_attempt,
                vec![
                    self.keys.admin_login_pair(name, net),
                    self.keys.admin_login_net(net),
                ],
                vec![
                    Value::from(max_pair as i64),
                    Value::from(max_net as i64),
                    Value::from(window_s as i64),
                ],
            )
            .await?;
        wait_of(reply)
    }

    /// Takes back a counted login attempt that was no wrong guess: `success` (the name's
    /// earlier attempts from `net` are forgotten too), or never checked.
    pub async fn login_undo(self, name: &str, net: &str, success: bool) -> StoreResult<()> {
        let _: u64 = self
            .scripts
            .run(
                self.pool.next(),
                &self.scripts.login_undo,
                vec![
                    self.keys.admin_login_pair(name, net),
                    self.keys.admin_login_net(net),
                ],
                vec![Value::from(if success { "1" } else { "0" })],
            )
            .await?;
        Ok(())
    }

    /// Counts a login attempt of `name` from any network (`undo`: takes one back), unless
    /// `max` were counted in the last `window_s` seconds: then the seconds until the count lapses.
    pub async fn login_name(
        self,
        name: &str,
        undo: bool,
        max: u64,
        window_s: u64,
    ) -> StoreResult<Option<u64>> {
        let reply = self
            .scripts
            .call::<Accepted>(
                self.pool.next(),
                &self.scripts.login_name,
                vec![self.keys.admin_login_name(name)],
                vec![
                    Value::from(if undo { "undo" } else { "count" }),
                    Value::from(max as i64),
                    Value::from(window_s as i64),
                ],
            )
            .await?;
        wait_of(reply)
    }

    /// Forgets the login attempts counted for `name` from every network (`tracker admin
    /// unlock`); whether there were any.
    pub async fn forget_login_name(self, name: &str) -> StoreResult<bool> {
        let n: u64 = self
            .pool
            .next()
            .del(self.keys.admin_login_name(name))
            .await?;
        Ok(n > 0)
    }

    /// Whether account `name` logged in from the browser whose device cookie hashes to `hash`.
    pub async fn known_device(self, name: &str, hash: &str) -> StoreResult<bool> {
        Ok(self
            .pool
            .next()
            .hexists(self.keys.admin_devices(name), hash)
            .await?)
    }

    /// Remembers the browser whose device cookie hashes to `hash` for account `name`, keeping
    /// the [`MAX_DEVICES`] used last, each for [`DEVICE_DAYS`] after its last login.
    pub async fn remember_device(self, name: &str, hash: &str, now: u64) -> StoreResult<()> {
        let key = self.keys.admin_devices(name);
        let client = self.pool.next();
        let _: () = client.hset(&key, (hash, now.to_string())).await?;
        let all: HashMap<String, String> = client.hgetall(&key).await?;
        let cutoff = now.saturating_sub(DEVICE_DAYS * 86_400_000);
        let mut seen: Vec<(u64, String)> = all
            .into_iter()
            .map(|(h, t)| (t.parse().unwrap_or(0), h))
            .collect();
        seen.sort_unstable_by(|a, b| b.cmp(a));
        let stale: Vec<String> = seen
            .iter()
            .enumerate()
            .filter(|(i, (t, _))| *i >= MAX_DEVICES || *t < cutoff)
            .map(|(_, (_, h))| h.clone())
            .collect();
        if !stale.is_empty() {
            let _: () = client.hdel(&key, stale).await?;
        }
        let _: () = client
            .expire(&key, (DEVICE_DAYS * 86_400) as i64, None)
            .await?;
        Ok(())
    }

    /// Forgets every browser account `name` logged in from (when it is deleted).
    pub async fn forget_devices(self, name: &str) -> StoreResult<()> {
        let _: () = self.pool.next().del(self.keys.admin_devices(name)).await?;
        Ok(())
    }

    /// The login attempts counted for `name` from `net`, and from `net` in all.
    pub async fn login_attempts(self, name: &str, net: &str) -> StoreResult<(u64, u64)> {
        let client = self.pool.next();
        let pair: Option<u64> = client.get(self.keys.admin_login_pair(name, net)).await?;
        let all: Option<u64> = client.get(self.keys.admin_login_net(net)).await?;
        Ok((pair.unwrap_or(0), all.unwrap_or(0)))
    }

    /// Appends an entry to the audit log (capped at [`AUDIT_LEN`]).
    pub async fn audit(self, entry: &AuditEntry) -> StoreResult<()> {
        let key = self.keys.admin_audit();
        let client = self.pool.next();
        let json = serde_json::to_string(entry).unwrap_or_default();
        let _: () = client.lpush(&key, json).await?;
        let _: () = client.ltrim(&key, 0, AUDIT_LEN as i64 - 1).await?;
        Ok(())
    }

    /// The newest `limit` audit entries passing `keep`, newest first.
    pub async fn audit_log(
        self,
        limit: usize,
        keep: impl Fn(&AuditEntry) -> bool,
    ) -> StoreResult<Vec<AuditEntry>> {
        let key = self.keys.admin_audit();
        let mut out = Vec::new();
        let mut start = 0i64;
        const PAGE: i64 = 1000;
        while out.len() < limit {
            let page: Vec<String> = self
                .pool
                .next()
                .lrange(&key, start, start + PAGE - 1)
                .await?;
            let end = (page.len() as i64) < PAGE;
            out.extend(
                page.iter()
                    .filter_map(|raw| serde_json::from_str::<AuditEntry>(raw).ok())
                    .filter(|e| keep(e))
                    .take(limit - out.len()),
            );
            if end {
                break;
            }
            start += PAGE;
        }
        Ok(out)
    }

    /// Panel-only fields of a project (`description`, `priority`).
    pub async fn project_extras(self, slug: &str) -> StoreResult<HashMap<String, String>> {
        Ok(self
            .pool
            .next()
            .hgetall(self.keys.project(slug).admin())
            .await?)
    }

    /// Sets a panel-only field of a project.
    pub async fn set_project_extra(self, slug: &str, field: &str, value: &str) -> StoreResult<()> {
        let _: () = self
            .pool
            .next()
            .hset(self.keys.project(slug).admin(), (field, value))
            .await?;
        Ok(())
    }
}
