//! Segment files: items that left Redis for disk ([`crate::store::offload::offloader`]), written once, never
//! changed, read by name.
//!
//! A segment holds records `(name, payload)` sorted by name: a done item and its timeline, or
//! a waiting item and its queue score. Layout, all integers little-endian:
//!
//! ```text
//! "TRKSEG1\n"
//! blocks     each a raw-deflate stream of records: u32 name length, name, u32 payload length,
//!            payload; a block closes past BLOCK_BYTES of records
//! index      per block: u64 offset, u32 length, u32 records, u32 first-name length, first name
//! filter     the names' Bloom filter: 64-byte blocks (the backfeed filter's geometry)
//! footer     u64 index offset, u64 filter offset, u64 filter blocks, u32 k, u64 records,
//!            "TRKSEGE\n"
//! ```
//!
//! A segment of kind `discard` has no blocks, only the filter: its names are gone and the
//! filter answers "probably known". Readers keep the index and the filter in memory (a few
//! bytes per item: [`KEPT_FP`], [`DISCARD_FP`]) and read one block per lookup that the filter
//! passes.

use crate::blocked_bloom::{hash_key as bloom_hash, Filter};
use flate2::{read::DeflateDecoder, write::DeflateEncoder, Compression};
use std::{
    fs::File,
    io::{BufWriter, Read, Write},
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
    sync::Arc,
};

const MAGIC: &[u8; 8] = b"TRKSEG1\n";
const END: &[u8; 8] = b"TRKSEGE\n";
const FOOTER: u64 = 8 + 8 + 8 + 4 + 8 + 8;
/// Records are grouped in blocks of about this many uncompressed bytes.
const BLOCK_BYTES: usize = 32 * 1024;
/// The filter's false-positive rate in a segment that keeps its names: a false positive costs
/// a block read and inflate (about 32 KB), and every lookup asks every segment, so the rate is
/// low enough that a thousand segments cost a block read per hundred lookups.
pub const KEPT_FP: f64 = 1e-5;
/// The filter's false-positive rate in a discard segment, where it is all that is left: the
/// chance that a new item is taken for a discarded one, per segment.
pub const DISCARD_FP: f64 = 1e-7;
/// How much of a segment's end its opening reads at once: the footer, the index and the filter
/// of a segment of 10,000 names (about 30 KB) in one read.
const TAIL_READ: u64 = 64 * 1024;
/// The longest name or payload a segment takes (a lookup reads no more).
pub const MAX_FIELD: usize = 1 << 20;

fn corrupt(what: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.into())
}

/// Writes `records` (sorted here by name; names distinct) as a segment at `path`: to a
/// temporary name beside it, fsynced, renamed, and the directory fsynced, so a segment either
/// exists whole or not at all. Without `keep_names` only the filter is written. The file's size.
pub fn write(
    path: &Path,
    records: &mut [(String, String)],
    keep_names: bool,
) -> std::io::Result<u64> {
    // What the reader would refuse is not written: the file would be a loss, not a copy.
    if let Some((name, _)) = records
        .iter()
        .find(|(n, p)| n.len() > MAX_FIELD || p.len() > MAX_FIELD)
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "a record longer than a segment holds ({MAX_FIELD} bytes): {}...",
                name.chars().take(40).collect::<String>()
            ),
        ));
    }
    records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let dir = path.parent().ok_or_else(|| corrupt("segment path"))?;
    {
        use std::os::unix::fs::DirBuilderExt;
        // Readable by this user only: the names are the project's items.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let tmp: PathBuf = dir.join(format!(
        ".partial-{}",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?
    };
    let mut out = BufWriter::new(file);
    out.write_all(MAGIC)?;
    let mut at = MAGIC.len() as u64;
    let mut index = Vec::new();
    if keep_names {
        let mut i = 0;
        while i < records.len() {
            let first = records[i].0.clone();
            let (start, mut raw) = (i, Vec::with_capacity(BLOCK_BYTES + 4096));
            while i < records.len() && raw.len() < BLOCK_BYTES {
                let (name, payload) = &records[i];
                raw.extend_from_slice(&(name.len() as u32).to_le_bytes());
                raw.extend_from_slice(name.as_bytes());
                raw.extend_from_slice(&(payload.len() as u32).to_le_bytes());
                raw.extend_from_slice(payload.as_bytes());
                i += 1;
            }
            let mut enc = DeflateEncoder::new(Vec::new(), Compression::fast());
            enc.write_all(&raw)?;
            let block = enc.finish()?;
            out.write_all(&block)?;
            index.push((at, block.len() as u32, (i - start) as u32, first));
            at += block.len() as u64;
        }
    }
    let index_at = at;
    for (offset, len, n, first) in &index {
        out.write_all(&offset.to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&n.to_le_bytes())?;
        out.write_all(&(first.len() as u32).to_le_bytes())?;
        out.write_all(first.as_bytes())?;
        at += 20 + first.len() as u64;
    }
    let filter_at = at;
    let target = if keep_names { KEPT_FP } else { DISCARD_FP };
    let filter = build_filter(records.iter().map(|r| r.0.as_str()), records.len(), target);
    let (bits, blocks, k) = filter.parts();
    out.write_all(bits)?;
    at += bits.len() as u64;
    out.write_all(&index_at.to_le_bytes())?;
    out.write_all(&filter_at.to_le_bytes())?;
    out.write_all(&blocks.to_le_bytes())?;
    out.write_all(&k.to_le_bytes())?;
    out.write_all(&(records.len() as u64).to_le_bytes())?;
    out.write_all(END)?;
    at += FOOTER;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()?;
    Ok(at)
}

/// A segment's filter of its names.
fn build_filter<'a>(names: impl Iterator<Item = &'a str>, n: usize, target: f64) -> Filter {
    let mut filter = Filter::empty(n as u64, target);
    for name in names {
        filter.insert(bloom_hash(name.as_bytes()));
    }
    filter
}

/// One block's place in the file.
struct BlockRef {
    offset: u64,
    len: u32,
    records: u32,
    first: String,
}

/// A block's records, inflated.
type Block = Arc<Vec<(String, String)>>;
/// (segment as opened, block index) -> its records.
type BlockCache = moka::sync::Cache<(u64, usize), Block>;

/// Decompressed blocks recently read, across every open segment: a name looked up again (a
/// client repeating dones of offloaded items) costs no disk read. Bounded in bytes.
static BLOCKS: std::sync::LazyLock<BlockCache> = std::sync::LazyLock::new(|| {
    moka::sync::Cache::builder()
        .max_capacity(BLOCK_CACHE_BYTES)
        .weigher(|_, v: &Block| {
            let bytes: usize = v.iter().map(|(n, p)| n.len() + p.len() + 48).sum();
            bytes.try_into().unwrap_or(u32::MAX)
        })
        .build()
});

/// The most bytes of decompressed blocks kept ([`BLOCKS`]).
pub const BLOCK_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// Numbers the segments opened by this process, for [`BLOCKS`].
static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where an open segment's bytes are read from, a range at a time: a local file, or an object
/// in a store ([`crate::storage`]).
pub trait Source: Send + Sync {
    /// Its size in bytes.
    fn size(&self) -> std::io::Result<u64>;
    /// Fills `buf` with the bytes at `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;
}

impl Source for File {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
}

/// An open segment: its index and filter in memory, its blocks read on demand.
pub struct Segment {
    uid: u64,
    file: Box<dyn Source>,
    blocks: Vec<BlockRef>,
    filter: Filter,
    records: u64,
    bytes: u64,
}

fn u32_at(b: &[u8], at: usize) -> std::io::Result<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| corrupt("truncated"))
}

fn u64_at(b: &[u8], at: usize) -> std::io::Result<u64> {
    b.get(at..at + 8)
        .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| corrupt("truncated"))
}

impl Segment {
    /// Opens the segment at `path`, reading its index and filter.
    pub fn open(path: &Path) -> std::io::Result<Segment> {
        Self::open_source(Box::new(File::open(path)?), path)
    }

    /// Opens the segment `file` (named `path` in errors), reading its index and filter.
    pub fn open_source(file: Box<dyn Source>, path: &Path) -> std::io::Result<Segment> {
        let bytes = file.size()?;
        if bytes < MAGIC.len() as u64 + FOOTER {
            return Err(corrupt(format!("{}: too short", path.display())));
        }
        // The end of the file, where the footer, the index and (most often all of) the filter
        // are, in one read: an object store answers each read with a request.
        let tail_at = bytes - bytes.min(TAIL_READ);
        let mut tail = vec![0u8; (bytes - tail_at) as usize];
        file.read_exact_at(&mut tail, tail_at)?;
        let read_at = |buf: &mut [u8], offset: u64| -> std::io::Result<()> {
            match offset.checked_sub(tail_at) {
                Some(at) => {
                    let at = at as usize;
                    let from = tail
                        .get(at..at + buf.len())
                        .ok_or_else(|| corrupt(format!("{}: past its end", path.display())))?;
                    buf.copy_from_slice(from);
                    Ok(())
                }
                None => file.read_exact_at(buf, offset),
            }
        };
        let mut footer = vec![0u8; FOOTER as usize];
        read_at(&mut footer, bytes - FOOTER)?;
        if &footer[36..44] != END {
            return Err(corrupt(format!("{}: no end marker", path.display())));
        }
        let (index_at, filter_at) = (u64_at(&footer, 0)?, u64_at(&footer, 8)?);
        let (filter_blocks, k, records) = (
            u64_at(&footer, 16)?,
            u32_at(&footer, 24)?,
            u64_at(&footer, 28)?,
        );
        if index_at > filter_at || filter_at + filter_blocks * 64 != bytes - FOOTER {
            return Err(corrupt(format!("{}: bad footer", path.display())));
        }
        let mut index = vec![0u8; (filter_at - index_at) as usize];
        read_at(&mut index, index_at)?;
        let mut blocks = Vec::new();
        let mut at = 0;
        while at < index.len() {
            let (offset, len, n) = (
                u64_at(&index, at)?,
                u32_at(&index, at + 8)?,
                u32_at(&index, at + 12)?,
            );
            let flen = u32_at(&index, at + 16)? as usize;
            let first = index
                .get(at + 20..at + 20 + flen)
                .ok_or_else(|| corrupt("truncated index"))?;
            // Blocks lie end to end between the magic and the index ([`Segment::for_each`]
            // reads them whole).
            let after = blocks.last().map_or(MAGIC.len() as u64, |b: &BlockRef| {
                b.offset + u64::from(b.len)
            });
            if offset < after || offset + u64::from(len) > index_at {
                return Err(corrupt(format!("{}: a block out of place", path.display())));
            }
            blocks.push(BlockRef {
                offset,
                len,
                records: n,
                first: String::from_utf8_lossy(first).into_owned(),
            });
            at += 20 + flen;
        }
        let mut bits = vec![0u8; (filter_blocks * 64) as usize];
        read_at(&mut bits, filter_at)?;
        Ok(Segment {
            uid: OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            file,
            blocks,
            filter: Filter::from_parts(bits, filter_blocks, k),
            records,
            bytes,
        })
    }

    /// Records written.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The file's size.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether the names are kept (not a discard segment).
    pub fn keeps_names(&self) -> bool {
        !self.blocks.is_empty() || self.records == 0
    }

    /// Whether the filter passes `name` (its [`bloom_hash`] `hash`): always for a held name.
    pub fn may_hold(&self, hash: u64) -> bool {
        self.filter.may_hold(hash)
    }

    /// How many blocks hold its records (none for a discard segment).
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// The names in block `i` (in name order; none past the last block), read from the file.
    pub fn block_names(&self, i: usize) -> std::io::Result<Vec<String>> {
        match self.blocks.get(i) {
            Some(b) => Ok(self.read_block(b)?.into_iter().map(|(n, _)| n).collect()),
            None => Ok(vec![]),
        }
    }

    fn read_block(&self, b: &BlockRef) -> std::io::Result<Vec<(String, String)>> {
        let mut packed = vec![0u8; b.len as usize];
        self.file.read_exact_at(&mut packed, b.offset)?;
        decode_block(&packed, b)
    }
}

/// The records of block `b`, from its compressed bytes `packed`.
fn decode_block(packed: &[u8], b: &BlockRef) -> std::io::Result<Vec<(String, String)>> {
    {
        let mut raw = Vec::new();
        DeflateDecoder::new(packed)
            .take((BLOCK_BYTES + 2 * MAX_FIELD + 16) as u64)
            .read_to_end(&mut raw)?;
        let mut out = Vec::with_capacity(b.records as usize);
        let mut at = 0;
        while at < raw.len() {
            let nl = u32_at(&raw, at)? as usize;
            let name = raw
                .get(at + 4..at + 4 + nl)
                .ok_or_else(|| corrupt("name"))?;
            let pl = u32_at(&raw, at + 4 + nl)? as usize;
            let payload = raw
                .get(at + 8 + nl..at + 8 + nl + pl)
                .ok_or_else(|| corrupt("payload"))?;
            out.push((
                String::from_utf8_lossy(name).into_owned(),
                String::from_utf8_lossy(payload).into_owned(),
            ));
            at += 8 + nl + pl;
        }
        Ok(out)
    }
}

impl Segment {
    /// The payload of `name`, if the segment holds it (for a discard segment: never).
    pub fn get(&self, name: &str) -> std::io::Result<Option<String>> {
        if !self.may_hold(bloom_hash(name.as_bytes())) {
            return Ok(None);
        }
        let i = self.blocks.partition_point(|b| b.first.as_str() <= name);
        let Some(at) = i.checked_sub(1) else {
            return Ok(None);
        };
        let key = (self.uid, at);
        let records = match BLOCKS.get(&key) {
            Some(r) => r,
            None => {
                let r = Arc::new(self.read_block(&self.blocks[at])?);
                BLOCKS.insert(key, r.clone());
                r
            }
        };
        Ok(records
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .map(|at| records[at].1.clone()))
    }

    /// Every record in name order, a block at a time, to `each`; stops at its first error.
    pub fn for_each(
        &self,
        mut each: impl FnMut(String, String) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        // The blocks lie end to end: read whole in one call (one request to an object store,
        // not one per block), then inflated a block at a time.
        let (Some(first), Some(last)) = (self.blocks.first(), self.blocks.last()) else {
            return Ok(());
        };
        let mut packed = vec![0u8; (last.offset + u64::from(last.len) - first.offset) as usize];
        self.file.read_exact_at(&mut packed, first.offset)?;
        for b in &self.blocks {
            let at = b
                .offset
                .checked_sub(first.offset)
                .ok_or_else(|| corrupt("block before the blocks"))? as usize;
            let bytes = packed
                .get(at..at + b.len as usize)
                .ok_or_else(|| corrupt("block past the blocks"))?;
            for (name, payload) in decode_block(bytes, b)? {
                each(name, payload)?;
            }
        }
        Ok(())
    }

    /// Every record, in name order.
    pub fn all(&self) -> std::io::Result<Vec<(String, String)>> {
        // The footer's count is not trusted for an allocation (a damaged one may say anything).
        let mut out = Vec::with_capacity(self.records.min(1 << 16) as usize);
        self.for_each(|n, p| {
            out.push((n, p));
            Ok(())
        })?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
