//! Per-account API tokens for scripts. Only the SHA-256 of a token's secret is stored: the
//! secret is shown once, when it is made. A token acts with its account's current role.

use super::StoreResult;
use fred::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub use app::model::admin::{ApiToken, TOKEN_DAYS_DEFAULT, TOKEN_DAYS_MAX};

/// `n` random letters and digits.
pub fn random_token(n: usize) -> String {
    use rand::{distr::Alphanumeric, Rng};
    rand::rng()
        .sample_iter(Alphanumeric)
        .take(n)
        .map(char::from)
        .collect()
}

/// What an account's token index holds per id.
#[derive(Serialize, Deserialize)]
struct IndexEntry {
    hash: String,
    name: String,
    t: u64,
    #[serde(default)]
    expires: u64,
}

/// When token `t` stops working: its own expiry, or for a token made before tokens expired,
/// [`TOKEN_DAYS_MAX`] days from its creation.
fn expiry(t: u64, expires: u64) -> u64 {
    if expires > 0 {
        expires
    } else {
        t.saturating_add(u64::from(TOKEN_DAYS_MAX) * 86_400_000)
    }
}

/// The hex SHA-256 of a token's secret: what is stored and looked up.
pub fn token_hash(secret: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl super::People<'_> {
    /// Stores token `token` of account `user` with the SHA-256 `hash` of its secret.
    pub async fn create_token(self, user: &str, token: &ApiToken, hash: &str) -> StoreResult<()> {
        let client = self.pool.next();
        let fields = vec![
            ("user", user.to_string()),
            ("id", token.id.clone()),
            ("name", token.name.clone()),
            ("t", token.t.to_string()),
            ("expires", token.expires.to_string()),
        ];
        let key = self.keys.admin_token(hash);
        let _: () = client.hset(&key, fields).await?;
        // Redis forgets the secret when the token expires; the lookup checks the time too.
        let _: () = client.pexpire_at(&key, token.expires as i64, None).await?;
        let entry = IndexEntry {
            hash: hash.into(),
            name: token.name.clone(),
            t: token.t,
            expires: token.expires,
        };
        let _: () = client
            .hset(
                self.keys.admin_tokens(user),
                (
                    token.id.as_str(),
                    serde_json::to_string(&entry).unwrap_or_default(),
                ),
            )
            .await?;
        Ok(())
    }

    /// The account and token id of the token whose secret hashes to `hash`, if it exists and
    /// has not expired at `now` (ms).
    pub async fn token_owner(self, hash: &str, now: u64) -> StoreResult<Option<(String, String)>> {
        let h: HashMap<String, String> = self
            .pool
            .next()
            .hgetall(self.keys.admin_token(hash))
            .await?;
        let number = |f: &str| h.get(f).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        if expiry(number("t"), number("expires")) <= now {
            return Ok(None);
        }
        Ok(match (h.get("user"), h.get("id")) {
            (Some(u), Some(id)) => Some((u.clone(), id.clone())),
            _ => None,
        })
    }

    /// The tokens of account `user` that have not expired at `now` (ms), oldest first; expired
    /// ones are dropped from the account's list.
    pub async fn tokens(self, user: &str, now: u64) -> StoreResult<Vec<ApiToken>> {
        let client = self.pool.next();
        let index = self.keys.admin_tokens(user);
        let raw: HashMap<String, String> = client.hgetall(&index).await?;
        let mut expired = Vec::new();
        let mut out: Vec<ApiToken> = raw
            .into_iter()
            .filter_map(|(id, v)| {
                let e: IndexEntry = serde_json::from_str(&v).ok()?;
                let expires = expiry(e.t, e.expires);
                if expires <= now {
                    expired.push((id, e.hash));
                    return None;
                }
                Some(ApiToken {
                    id,
                    name: e.name,
                    t: e.t,
                    expires,
                })
            })
            .collect();
        for (id, hash) in expired {
            let _: () = client.del(self.keys.admin_token(&hash)).await?;
            let _: () = client.hdel(&index, id).await?;
        }
        out.sort_by(|a, b| a.t.cmp(&b.t).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Revokes token `id` of account `user`; whether it existed.
    pub async fn revoke_token(self, user: &str, id: &str) -> StoreResult<bool> {
        let client = self.pool.next();
        let index = self.keys.admin_tokens(user);
        let raw: Option<String> = client.hget(&index, id).await?;
        let Some(raw) = raw else {
            return Ok(false);
        };
        // The secret's key goes first: once it is gone the token no longer works.
        if let Ok(e) = serde_json::from_str::<IndexEntry>(&raw) {
            let _: () = client.del(self.keys.admin_token(&e.hash)).await?;
        }
        let _: () = client.hdel(&index, id).await?;
        Ok(true)
    }

    /// Revokes every token of account `user` (when it is deleted); how many.
    pub async fn revoke_all_tokens(self, user: &str) -> StoreResult<u64> {
        let mut n = 0;
        for t in self.tokens(user, 0).await? {
            n += u64::from(self.revoke_token(user, &t.id).await?);
        }
        Ok(n)
    }
}
