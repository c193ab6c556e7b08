//! Admin accounts, the one-time setup token, login failure counters and the audit log.

use super::{Store, StoreResult};
use crate::keys::AUDIT_LEN;
use fred::prelude::*;
use fred::types::{Expiration, ExpireOptions};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What an account may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Everything, on every project, and the accounts.
    Global,
    /// Everything on the projects listed in the account.
    Project,
    /// Sees everything, changes nothing.
    ReadOnly,
}

impl Role {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Global => "global",
            Role::Project => "project",
            Role::ReadOnly => "read_only",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "global" => Some(Role::Global),
            "project" => Some(Role::Project),
            "read_only" | "readonly" | "read-only" => Some(Role::ReadOnly),
            _ => None,
        }
    }
}

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
}

/// One audit log entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When (ms).
    pub t: u64,
    /// Who (account name, or `api-token`, or `cli`).
    pub who: String,
    /// What, e.g. `items.add`, `claims.release`.
    pub action: String,
    /// The project, if any.
    #[serde(default)]
    pub project: String,
    /// Items (or entries) affected.
    #[serde(default)]
    pub count: u64,
    /// Parameters, short.
    #[serde(default)]
    pub detail: String,
}

/// Whether `name` may name an account: 1 to 32 of `a-z0-9._-` (after lowercasing).
pub fn valid_user_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

impl Store {
    /// Creates an account; `Ok(false)` if the name is taken.
    pub async fn create_account(&self, account: &Account) -> StoreResult<bool> {
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
    pub async fn save_account(&self, a: &Account) -> StoreResult<()> {
        let fields = vec![
            ("hash", a.hash.clone()),
            ("role", a.role.as_str().to_string()),
            (
                "projects",
                serde_json::to_string(&a.projects).unwrap_or_default(),
            ),
            ("t", a.t.to_string()),
        ];
        let _: () = self
            .pool
            .next()
            .hset(self.keys.admin_user(&a.name), fields)
            .await?;
        Ok(())
    }

    /// The account called `name` (lowercase), if any.
    pub async fn account(&self, name: &str) -> StoreResult<Option<Account>> {
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
        }))
    }

    /// Every account, by name.
    pub async fn accounts(&self) -> StoreResult<Vec<Account>> {
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
    pub async fn account_count(&self) -> StoreResult<u64> {
        Ok(self.pool.next().scard(self.keys.admin_users()).await?)
    }

    /// Deletes an account; whether it existed.
    pub async fn delete_account(&self, name: &str) -> StoreResult<bool> {
        let client = self.pool.next();
        let n: u64 = client.srem(self.keys.admin_users(), name).await?;
        let _: () = client.del(self.keys.admin_user(name)).await?;
        Ok(n > 0)
    }

    /// Stores the one-time setup token (replacing an older one), valid for a day.
    pub async fn set_setup_token(&self, token: &str) -> StoreResult<()> {
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
    pub async fn setup_token(&self) -> StoreResult<Option<String>> {
        Ok(self.pool.next().get(self.keys.admin_setup()).await?)
    }

    /// Failed logins counted for `kind` (`ip`/`user`) `value`, and seconds until they lapse.
    pub async fn login_failures(&self, kind: &str, value: &str) -> StoreResult<(u64, u64)> {
        let key = self.keys.admin_failures(kind, value);
        let client = self.pool.next();
        let n: Option<u64> = client.get(&key).await?;
        let ttl: i64 = client.ttl(&key).await?;
        Ok((n.unwrap_or(0), ttl.max(1) as u64))
    }

    /// Counts a failed login for `kind` `value`; the window starts at the first failure.
    pub async fn add_login_failure(
        &self,
        kind: &str,
        value: &str,
        window_s: i64,
    ) -> StoreResult<()> {
        let key = self.keys.admin_failures(kind, value);
        let client = self.pool.next();
        let _: u64 = client.incr(&key).await?;
        let _: () = client
            .expire(&key, window_s, Some(ExpireOptions::NX))
            .await?;
        Ok(())
    }

    /// Forgets failed logins of `kind` `value`.
    pub async fn clear_login_failures(&self, kind: &str, value: &str) -> StoreResult<()> {
        let _: () = self
            .pool
            .next()
            .del(self.keys.admin_failures(kind, value))
            .await?;
        Ok(())
    }

    /// Appends an entry to the audit log (capped at [`AUDIT_LEN`]).
    pub async fn audit(&self, entry: &AuditEntry) -> StoreResult<()> {
        let key = self.keys.admin_audit();
        let client = self.pool.next();
        let json = serde_json::to_string(entry).unwrap_or_default();
        let _: () = client.lpush(&key, json).await?;
        let _: () = client.ltrim(&key, 0, AUDIT_LEN as i64 - 1).await?;
        Ok(())
    }

    /// The newest `limit` audit entries passing `keep`, newest first.
    pub async fn audit_log(
        &self,
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
    pub async fn project_extras(&self, slug: &str) -> StoreResult<HashMap<String, String>> {
        Ok(self
            .pool
            .next()
            .hgetall(self.keys.project(slug).admin())
            .await?)
    }

    /// Sets a panel-only field of a project.
    pub async fn set_project_extra(&self, slug: &str, field: &str, value: &str) -> StoreResult<()> {
        let _: () = self
            .pool
            .next()
            .hset(self.keys.project(slug).admin(), (field, value))
            .await?;
        Ok(())
    }
}
