//! Per project, the zstd dictionaries the grab scripts compress their WARCs with
//! (`GET /dictionary?project=SLUG`): the bytes as an admin uploaded them (a raw dictionary, or
//! one in a zstd frame), checked to load as a zstd dictionary, each with an id and its SHA-256.
//! The last [`KEPT`] stay downloadable by id, for uploads still in flight that name an older
//! one; `cur` names the one served now and is written last, so a reader never sees an id whose
//! bytes are not there.

use super::{now_ms, StoreError, StoreResult};
use fred::prelude::*;

/// Dictionaries kept per project (the current one and the ones before it).
pub const KEPT: u64 = 8;
/// Ids are this plus the project's count of dictionaries set: ten decimal digits, as megawarc
/// reads them from a WARC's name (`.PROJECT.ID.warc.zst`, `[0-9]{10}`; ArchiveTeam/megawarc
/// `megawarc` at 8564db93). Dictionaries set before (ids from 1) keep theirs.
pub const ID_BASE: u64 = 1_000_000_000;
/// The largest dictionary taken, as uploaded and once decompressed.
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

pub use app::model::admin::DictionaryInfo;

/// Why bytes are not a dictionary the grab scripts can use, if they are not: a raw zstd
/// dictionary (magic `37 A4 30 EC`), or one in a zstd frame (`28 B5 2F FD`) whose header
/// records its content size (python-zstandard's `decompress` needs it), at most
/// [`MAX_BYTES`] either way.
pub fn dictionary_problem(bytes: &[u8]) -> Option<String> {
    if bytes.len() > MAX_BYTES {
        return Some(format!("a dictionary is at most {MAX_BYTES} bytes"));
    }
    let raw: std::borrow::Cow<[u8]> = if bytes.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        // Frame header descriptor: content size present unless both the size flag (bits 6-7)
        // is 0 and the single-segment flag (bit 5) is unset.
        let fhd = *bytes.get(4)?;
        if fhd >> 6 == 0 && fhd & 0x20 == 0 {
            return Some(
                "the zstd frame does not record its content size (compress the dictionary with \
                 `zstd`, not from a stream)"
                    .into(),
            );
        }
        match zstd::bulk::decompress(bytes, MAX_BYTES) {
            Ok(out) => out.into(),
            Err(e) => {
                return Some(format!(
                    "the zstd frame does not decompress (within {MAX_BYTES} bytes): {e}"
                ))
            }
        }
    } else {
        bytes.into()
    };
    // A dictionary proper (its magic number, then entropy tables libzstd must load): raw bytes
    // without the magic would pass as "content" dictionaries, which the grab scripts do not make.
    if !raw.starts_with(&[0x37, 0xA4, 0x30, 0xEC]) {
        return Some("not a zstd dictionary: no dictionary magic number".into());
    }
    // Its entropy tables alone take more (and libzstd ignores a dictionary under 8 bytes).
    if raw.len() < 64 {
        return Some("not a zstd dictionary: too short".into());
    }
    match zstd::bulk::Decompressor::with_dictionary(&raw) {
        Ok(mut d) => {
            // Loading is lazy: a frame compressed with it must come back.
            let sample = b"tracker dictionary check";
            let packed = zstd::bulk::Compressor::with_dictionary(1, &raw)
                .and_then(|mut c| c.compress(sample))
                .map_err(|e| format!("not a zstd dictionary: {e}"));
            match packed.map(|p| d.decompress(&p, sample.len())) {
                Ok(Ok(back)) if back == sample => None,
                Ok(Ok(_)) => Some("not a zstd dictionary: it does not round-trip".into()),
                Ok(Err(e)) => Some(format!("not a zstd dictionary: {e}")),
                Err(e) => Some(e),
            }
        }
        Err(e) => Some(format!("not a zstd dictionary: {e}")),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl super::Projects<'_> {
    /// Makes `bytes` (checked by the caller with [`dictionary_problem`]) the dictionary of
    /// `slug`; the ones before it beyond [`KEPT`] go.
    pub async fn set_dictionary(self, slug: &str, bytes: &[u8]) -> StoreResult<DictionaryInfo> {
        let key = self.keys.project(slug).dictionaries();
        let client = self.pool.next();
        let seq: u64 = client.hincrby(&key, "seq", 1).await?;
        let id = ID_BASE + seq;
        let info = DictionaryInfo {
            id,
            sha256: sha256_hex(bytes),
            bytes: bytes.len() as u64,
            t: now_ms(),
        };
        let meta = serde_json::to_string(&info).map_err(|e| StoreError::Reply {
            script: "dictionary",
            detail: e.to_string(),
        })?;
        let _: () = client
            .hset(
                &key,
                vec![
                    (format!("b:{id}"), Value::from(bytes)),
                    (format!("n:{id}"), Value::from(meta)),
                ],
            )
            .await?;
        // Served from now on; then the oldest beyond the kept ones go (ids of either scheme).
        let _: () = client.hset(&key, ("cur", id.to_string())).await?;
        let fields: Vec<String> = client.hkeys(&key).await?;
        let mut ids: Vec<u64> = fields
            .iter()
            .filter_map(|f| f.strip_prefix("n:")?.parse().ok())
            .collect();
        ids.sort_unstable();
        let beyond = ids.len().saturating_sub(KEPT as usize);
        let gone: Vec<String> = ids[..beyond]
            .iter()
            .flat_map(|old| [format!("b:{old}"), format!("n:{old}")])
            .collect();
        if !gone.is_empty() {
            let _: i64 = client.hdel(&key, gone).await?;
        }
        Ok(info)
    }

    /// The dictionary `slug` serves now, if any.
    pub async fn dictionary(self, slug: &str) -> StoreResult<Option<DictionaryInfo>> {
        let key = self.keys.project(slug).dictionaries();
        let client = self.pool.next();
        let cur: Option<String> = client.hget(&key, "cur").await?;
        let Some(cur) = cur else {
            return Ok(None);
        };
        let meta: Option<String> = client.hget(&key, format!("n:{cur}")).await?;
        Ok(meta.and_then(|m| serde_json::from_str(&m).ok()))
    }

    /// Dictionary `id` of `slug`, while kept (megawarc asks for the one a WARC names).
    pub async fn dictionary_by_id(
        self,
        slug: &str,
        id: u64,
    ) -> StoreResult<Option<DictionaryInfo>> {
        let key = self.keys.project(slug).dictionaries();
        let meta: Option<String> = self.pool.next().hget(&key, format!("n:{id}")).await?;
        Ok(meta.and_then(|m| serde_json::from_str(&m).ok()))
    }

    /// The bytes of dictionary `id` of `slug`, while kept.
    pub async fn dictionary_bytes(
        self,
        slug: &str,
        id: u64,
    ) -> StoreResult<Option<axum::body::Bytes>> {
        let key = self.keys.project(slug).dictionaries();
        let client = self.pool.next();
        // Its record (a hundred bytes) says whether it is kept, and which bytes it names: a
        // project destroyed and made again numbers its dictionaries from the start again.
        let meta: Option<String> = client.hget(&key, format!("n:{id}")).await?;
        let Some(sha256) = meta
            .and_then(|m| serde_json::from_str::<DictionaryInfo>(&m).ok())
            .map(|info| info.sha256)
        else {
            return Ok(None);
        };
        let cache_key = (key.clone(), id);
        if let Some((sha, bytes)) = BYTES.get(&cache_key).await {
            if sha == sha256 {
                return Ok(Some(bytes));
            }
            BYTES.invalidate(&cache_key).await;
        }
        // One read of the bytes at a time per dictionary, however many ask at once.
        let load = async {
            let bytes: Option<Vec<u8>> = client.hget(&key, format!("b:{id}")).await?;
            let bytes = bytes.ok_or(StoreError::NoProject)?;
            let sha = sha256_hex(&bytes);
            Ok::<_, StoreError>((sha, axum::body::Bytes::from(bytes)))
        };
        match BYTES.try_get_with(cache_key, load).await {
            Ok((sha, bytes)) if sha == sha256 => Ok(Some(bytes)),
            // Replaced between the two reads: as if it were not kept.
            Ok(_) => Ok(None),
            Err(e) => match e.as_ref() {
                StoreError::NoProject => Ok(None),
                _ => Err(StoreError::Unavailable(e.to_string())),
            },
        }
    }
}

/// The dictionaries' bytes this process served, by (hash key, id), with their SHA-256: an id
/// served a thousand times is read from Redis once. At most [`CACHE_BYTES`] in all.
static BYTES: std::sync::LazyLock<moka::future::Cache<(String, u64), (String, axum::body::Bytes)>> =
    std::sync::LazyLock::new(|| {
        moka::future::Cache::builder()
            .weigher(|_, (_, b): &(String, axum::body::Bytes)| {
                u32::try_from(b.len()).unwrap_or(u32::MAX)
            })
            .max_capacity(CACHE_BYTES)
            .time_to_idle(std::time::Duration::from_secs(3600))
            .build()
    });

/// The most dictionary bytes one process keeps ([`BYTES`]): eight dictionaries of the largest
/// size.
pub const CACHE_BYTES: u64 = 8 * MAX_BYTES as u64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_zstd_dictionaries_pass() {
        assert!(dictionary_problem(b"not a dictionary").is_some());
        assert!(
            dictionary_problem(&[0x37, 0xA4, 0x30, 0xEC, 0, 0]).is_some(),
            "truncated"
        );
        // A frame without its content size (descriptor 0x00) is refused with the reason.
        let why = dictionary_problem(&[0x28, 0xB5, 0x2F, 0xFD, 0x00, 0, 0, 0]).unwrap();
        assert!(why.contains("content size"), "{why}");
        // A trained one passes, raw and framed; cut short or garbled, it does not.
        let samples: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                format!(
                    "<html><head><title>page {i}</title></head><body>{}</body></html>",
                    "word ".repeat(i % 13)
                )
                .into_bytes()
            })
            .collect();
        let dict = zstd::dict::from_samples(&samples, 4096).unwrap();
        assert_eq!(dictionary_problem(&dict), None);
        assert_eq!(
            dictionary_problem(&zstd::bulk::compress(&dict, 3).unwrap()),
            None
        );
        assert!(dictionary_problem(&dict[..40]).is_some(), "cut short");
        let mut junk = dict.clone();
        junk[8..64].fill(0xff);
        assert!(dictionary_problem(&junk).is_some(), "tables garbled");
    }
}
