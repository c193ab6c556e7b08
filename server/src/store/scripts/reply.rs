//! The scripts' JSON replies: refusals, and the serde helpers for what Lua's cjson writes.

use super::super::refusal::Refusal;
use serde::{
    de::{DeserializeOwned, Error as _},
    Deserialize, Deserializer,
};

/// A JSON reply: a refusal (an object with `err`), or the script's result `T` (an array, or an
/// object without `err`). Told apart by the `err` field, not by trying each in turn, so that no
/// result is ever read as a refusal.
#[derive(Debug)]
pub enum Reply<T> {
    /// `{"err": code, ...}`.
    Refused(Refusal),
    /// Anything else.
    Ok(T),
}

impl<T> Reply<T> {
    /// The result, or the refusal as the error.
    pub fn into_result(self) -> Result<T, Refusal> {
        match self {
            Reply::Ok(t) => Ok(t),
            Reply::Refused(r) => Err(r),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Reply<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either<T>(std::marker::PhantomData<T>);
        impl<'de, T: DeserializeOwned> serde::de::Visitor<'de> for Either<T> {
            type Value = Reply<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON array or object")
            }
            // An array is never a refusal: read in one pass (the items of a claim).
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Reply<T>, A::Error> {
                T::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(Reply::Ok)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Reply<T>, A::Error> {
                let value = serde_json::Value::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                if value.get("err").is_some() {
                    Refusal::deserialize(value)
                        .map(Reply::Refused)
                        .map_err(A::Error::custom)
                } else {
                    T::deserialize(value)
                        .map(Reply::Ok)
                        .map_err(A::Error::custom)
                }
            }
        }
        d.deserialize_any(Either(std::marker::PhantomData))
    }
}

/// The replies of a batch script, one per request in order (a Lua sequence, see [`lua_list`]).
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct Batch<T: DeserializeOwned>(#[serde(deserialize_with = "lua_list")] pub Vec<T>);

/// A list as cjson writes a Lua sequence: a JSON array, or `{}` when empty (cjson cannot tell
/// an empty sequence from an empty table). Read in one pass, without buffering (the claim and
/// done replies of a batch go through it).
pub fn lua_list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    struct List<T>(std::marker::PhantomData<T>);
    impl<'de, T: DeserializeOwned> serde::de::Visitor<'de> for List<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array, or {} for an empty one")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(x) = seq.next_element()? {
                out.push(x);
            }
            Ok(out)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vec<T>, A::Error> {
            match map.next_key::<serde::de::IgnoredAny>()? {
                None => Ok(Vec::new()),
                Some(_) => Err(A::Error::custom(
                    "expected an array, got a non-empty object",
                )),
            }
        }
    }
    d.deserialize_any(List(std::marker::PhantomData))
}

/// A count as the scripts pass Redis's numbers on: a JSON number, or the decimal string Redis
/// gave (sorted-set scores, hash fields) for numbers cjson could not print exactly (past
/// 10^14). Negative or unreadable counts are 0, as the pages treat them.
pub fn lua_count<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Count {
        Int(u64),
        Float(f64),
        Text(String),
    }
    Ok(match Count::deserialize(d)? {
        Count::Int(n) => n,
        Count::Float(f) => f.max(0.0) as u64,
        Count::Text(s) => s
            .parse::<u64>()
            .ok()
            .or_else(|| s.parse::<f64>().ok().map(|f| f.max(0.0) as u64))
            .unwrap_or(0),
    })
}

/// A number Redis keeps as text, in a JSON list or map (see [`lua_count`]).
#[derive(Debug, Deserialize)]
pub struct Count(#[serde(deserialize_with = "lua_count")] pub u64);

/// The result `{}` of a script that answers only "done" or a refusal (release, login_attempt,
/// rescue_attempt).
#[derive(Debug, Deserialize)]
pub struct Accepted {}
