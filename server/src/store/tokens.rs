//! Per-account API tokens for scripts. Only the SHA-256 of a token's secret is stored: the
//! secret is shown once, when it is made. A token acts with its account's current role.

use super::{Store, StoreResult};
use fred::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub use app::model::admin::ApiToken;

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
}

/// The hex SHA-256 of a token's secret: what is stored and looked up.
pub fn token_hash(secret: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Store {
    /// Stores token `token` of account `user` with the SHA-256 `hash` of its secret.
    pub async fn create_token(&self, user: &str, token: &ApiToken, hash: &str) -> StoreResult<()> {
        let client = self.pool.next();
        let fields = vec![
            ("user", user.to_string()),
            ("id", token.id.clone()),
            ("name", token.name.clone()),
            ("t", token.t.to_string()),
        ];
        let _: () = client.hset(self.keys.admin_token(hash), fields).await?;
        let entry = IndexEntry {
            hash: hash.into(),
            name: token.name.clone(),
            t: token.t,
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

    /// The account and token id of the token whose secret hashes to `hash`, if it exists.
    pub async fn token_owner(&self, hash: &str) -> StoreResult<Option<(String, String)>> {
        let h: HashMap<String, String> = self
            .pool
            .next()
            .hgetall(self.keys.admin_token(hash))
            .await?;
        Ok(match (h.get("user"), h.get("id")) {
            (Some(u), Some(id)) => Some((u.clone(), id.clone())),
            _ => None,
        })
    }

    /// The tokens of account `user`, oldest first.
    pub async fn tokens(&self, user: &str) -> StoreResult<Vec<ApiToken>> {
        let raw: HashMap<String, String> = self
            .pool
            .next()
            .hgetall(self.keys.admin_tokens(user))
            .await?;
        let mut out: Vec<ApiToken> = raw
            .into_iter()
            .filter_map(|(id, v)| {
                let e: IndexEntry = serde_json::from_str(&v).ok()?;
                Some(ApiToken {
                    id,
                    name: e.name,
                    t: e.t,
                })
            })
            .collect();
        out.sort_by(|a, b| a.t.cmp(&b.t).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Revokes token `id` of account `user`; whether it existed.
    pub async fn revoke_token(&self, user: &str, id: &str) -> StoreResult<bool> {
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
    pub async fn revoke_all_tokens(&self, user: &str) -> StoreResult<u64> {
        let mut n = 0;
        for t in self.tokens(user).await? {
            n += u64::from(self.revoke_token(user, &t.id).await?);
        }
        Ok(n)
    }
}
