//! A backfeed body made into records: decompressed within its caps, checked as UTF-8 in place
//! and split on the byte slice. The work is synchronous; the handler runs it on a blocking thread.

use crate::{
    limits::{Limits, BACKFEED_RATIO_GRACE},
    store::{bloom_hash, BackfeedRecord, Patterns},
    web::{ApiError, ApiResult},
};
use axum::{body::Bytes, http::StatusCode};
use std::{
    cell::Cell,
    io::{BufRead, Read},
};

/// The largest zstd window accepted: what levels up to 19 use without `--long`. A frame's
/// window is reserved whole when the frame starts, before any of it is decoded.
pub const ZSTD_MAX_WINDOW: u64 = 8 * 1024 * 1024;

/// How many decompressed bytes are read at a time.
const CHUNK: usize = 64 * 1024;

/// A body's `Content-Encoding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// As sent.
    Identity,
    /// `gzip` or `x-gzip`.
    Gzip,
    /// `zstd`.
    Zstd,
}

impl Encoding {
    /// The encoding a `Content-Encoding` value names; 415 for any other.
    pub fn from_header(value: Option<&str>) -> ApiResult<Self> {
        match value.map(str::trim).unwrap_or("") {
            "" | "identity" => Ok(Self::Identity),
            "gzip" | "x-gzip" => Ok(Self::Gzip),
            "zstd" => Ok(Self::Zstd),
            other => Err(ApiError::Client(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Unsupported Content-Encoding {other}."),
            )),
        }
    }
}

/// What a body may grow to, from [`Limits`].
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// Most bytes once decompressed.
    pub decoded: u64,
    /// Beyond [`BACKFEED_RATIO_GRACE`], most decompressed bytes per compressed byte read.
    pub ratio: u64,
}

impl From<&Limits> for Caps {
    fn from(l: &Limits) -> Self {
        Self {
            decoded: l.backfeed_decoded,
            ratio: l.backfeed_ratio,
        }
    }
}

/// How records are written in a body.
#[derive(Clone, Copy, Debug)]
pub struct Format {
    /// Ends each record.
    pub delimiter: char,
    /// Splits a record into its filter key and its item; without it, the key is the item.
    pub separator: Option<char>,
    /// Most records of one body.
    pub max_records: usize,
    /// Longest item, in bytes.
    pub max_item: usize,
}

fn too_large(reason: String) -> ApiError {
    ApiError::Client(StatusCode::PAYLOAD_TOO_LARGE, reason)
}

/// The records of a body a call could not take, one by one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rejected {
    /// How many.
    pub count: u64,
    /// Why the first was.
    pub first: Option<String>,
}

impl Rejected {
    fn add(&mut self, why: impl FnOnce() -> String) {
        if self.count == 0 {
            self.first = Some(why());
        }
        self.count += 1;
    }
}

/// The records of `body`: decompressed ([`decode`]), then split ([`split_records`]).
pub fn records(
    encoding: Encoding,
    body: Bytes,
    caps: Caps,
    format: Format,
    patterns: &Patterns,
) -> ApiResult<(Vec<BackfeedRecord>, Rejected)> {
    let decoded = decode(encoding, body, caps)?;
    split_records(&decoded, format, patterns)
}

/// The compressed input, counting the bytes the decompressor has consumed.
struct Counted<'a> {
    rest: &'a [u8],
    consumed: &'a Cell<u64>,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.rest.read(buf)?;
        self.consumed.set(self.consumed.get() + n as u64);
        Ok(n)
    }
}

impl BufRead for Counted<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        Ok(self.rest)
    }

    fn consume(&mut self, n: usize) {
        self.rest.consume(n);
        self.consumed.set(self.consumed.get() + n as u64);
    }
}

/// `body` decompressed, or 413 as soon as the output passes `caps.decoded` bytes or
/// [`BACKFEED_RATIO_GRACE`] + `caps.ratio` times the compressed bytes consumed so far. The
/// output is read in chunks through `take(decoded + 1)` into a buffer that never grows past
/// `caps.decoded`, so a bomb costs at most that much memory and stops early. A plain body is
/// returned as it is, without a copy.
pub fn decode(encoding: Encoding, body: Bytes, caps: Caps) -> ApiResult<Bytes> {
    if encoding == Encoding::Identity {
        if body.len() as u64 > caps.decoded {
            return Err(too_large(format!(
                "The body is larger than {} bytes.",
                caps.decoded
            )));
        }
        return Ok(body);
    }
    let consumed = Cell::new(0);
    let input = Counted {
        rest: &body,
        consumed: &consumed,
    };
    let out = match encoding {
        Encoding::Gzip => read_capped(flate2::bufread::GzDecoder::new(input), &consumed, caps),
        _ => {
            let window = zstd_window(&body)
                .ok_or_else(|| ApiError::bad_request("Invalid zstd body: no frame header."))?;
            if window > ZSTD_MAX_WINDOW {
                return Err(too_large(format!(
                    "The zstd window is larger than {ZSTD_MAX_WINDOW} bytes (compress without --long)."
                )));
            }
            let decoder = ruzstd::decoding::StreamingDecoder::new(input)
                .map_err(|e| ApiError::bad_request(format!("Invalid zstd body: {e}")))?;
            read_capped(decoder, &consumed, caps)
        }
    };
    let name = if encoding == Encoding::Gzip {
        "gzip"
    } else {
        "zstd"
    };
    match out {
        Ok(out) => Ok(Bytes::from(out)),
        Err(Stop::Refused(e)) => Err(e),
        Err(Stop::Invalid(e)) => Err(ApiError::bad_request(format!("Invalid {name} body: {e}"))),
    }
}

/// Why decompression stopped early.
enum Stop {
    /// A cap was passed (413).
    Refused(ApiError),
    /// The data does not decompress (400).
    Invalid(std::io::Error),
}

fn read_capped(decoder: impl Read, consumed: &Cell<u64>, caps: Caps) -> Result<Vec<u8>, Stop> {
    let cap = usize::try_from(caps.decoded).unwrap_or(usize::MAX);
    let mut reader = decoder.take(caps.decoded.saturating_add(1));
    let mut chunk = vec![0u8; CHUNK];
    let mut out: Vec<u8> = Vec::new();
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Stop::Invalid(e)),
        };
        let len = out.len() + n;
        if len > cap {
            return Err(Stop::Refused(too_large(format!(
                "The body decompresses to more than {} bytes.",
                caps.decoded
            ))));
        }
        let allowed =
            BACKFEED_RATIO_GRACE.saturating_add(caps.ratio.saturating_mul(consumed.get()));
        if len as u64 > allowed {
            return Err(Stop::Refused(too_large(format!(
                "The body decompresses to more than {} times its compressed size.",
                caps.ratio
            ))));
        }
        if len > out.capacity() {
            // Doubling, but never past the cap: `reserve` alone could allocate twice the cap.
            let grown = (out.capacity() * 2).max(CHUNK).min(cap).max(len);
            out.reserve_exact(grown - out.len());
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// The window size a zstd frame declares, read from its header (RFC 8878, 3.1.1.1); `None`
/// when `body` does not start with a zstd frame header.
fn zstd_window(body: &[u8]) -> Option<u64> {
    if body.get(..4)? != [0x28, 0xb5, 0x2f, 0xfd] {
        return None;
    }
    let descriptor = *body.get(4)?;
    let single_segment = descriptor & 0x20 != 0;
    if !single_segment {
        let wd = *body.get(5)?;
        let log = 10 + u32::from(wd >> 3);
        let base = 1u64 << log;
        return Some(base + (base / 8) * u64::from(wd & 7));
    }
    // A single segment's window is its content size, which follows the dictionary id.
    let dict_bytes = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let size_bytes = [1, 2, 4, 8][usize::from(descriptor >> 6)];
    let at = 5 + dict_bytes;
    let field = body.get(at..at + size_bytes)?;
    let mut le = [0u8; 8];
    le[..size_bytes].copy_from_slice(field);
    let size = u64::from_le_bytes(le);
    Some(if size_bytes == 2 { size + 256 } else { size })
}

/// The records of a decoded body, without a copy of it: the body is split on the delimiter
/// (as bytes: UTF-8 never holds a character's bytes inside another's), and each record checked
/// as UTF-8 in place; only each record's item is copied out.
///
/// ```text
/// record DELIMITER record DELIMITER ...        (empty records are skipped)
/// record = item | key SEPARATOR item           (the filter sees the key; without one, the item)
/// ```
///
/// A record that is not UTF-8, or whose item is empty or over `max_item` bytes, is rejected
/// alone ([`Rejected`]): the others are taken (a grab script retries a refused batch, then
/// kills its item, so one odd URL found on a page must not fail every item that finds it).
/// 413 past `max_records` records.
pub fn split_records(
    body: &[u8],
    format: Format,
    patterns: &Patterns,
) -> ApiResult<(Vec<BackfeedRecord>, Rejected)> {
    let mut delimiter = [0u8; 4];
    let delimiter = format.delimiter.encode_utf8(&mut delimiter).as_bytes();
    let mut records = Vec::new();
    let mut rejected = Rejected::default();
    let mut rest = body;
    while !rest.is_empty() {
        let (raw, next) = match find(rest, delimiter) {
            Some(at) => (&rest[..at], &rest[at + delimiter.len()..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        if raw.is_empty() {
            continue;
        }
        if records.len() as u64 + rejected.count == format.max_records as u64 {
            return Err(too_large(format!(
                "At most {} records per call.",
                format.max_records
            )));
        }
        let nth = records.len() as u64 + rejected.count + 1;
        let Ok(record) = std::str::from_utf8(raw) else {
            rejected.add(|| format!("record {nth} is not UTF-8"));
            continue;
        };
        let (key, item) = match format.separator.and_then(|sep| record.split_once(sep)) {
            Some((key, rest)) => (key, rest),
            None => (record, record),
        };
        if item.is_empty() || item.len() > format.max_item {
            rejected.add(|| {
                format!(
                    "record {nth}: items are 1 to {} bytes, not {}",
                    format.max_item,
                    item.len()
                )
            });
            continue;
        }
        records.push(BackfeedRecord {
            hash: bloom_hash(key.as_bytes()),
            part: patterns.part_of(item),
            item: item.to_string(),
        });
    }
    Ok((records, rejected))
}

/// Where `needle` first starts in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() == 1 {
        return hay.iter().position(|&b| b == needle[0]);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const CAPS: Caps = Caps {
        decoded: 64 * 1024 * 1024,
        ratio: 100,
    };

    fn status(r: ApiResult<Bytes>) -> (u16, String) {
        match r {
            Ok(b) => (200, format!("{} bytes", b.len())),
            Err(ApiError::Client(s, reason)) => (s.as_u16(), reason),
            Err(e) => (500, e.to_string()),
        }
    }

    /// `n` zeros gzipped, written a MiB at a time.
    fn gzip_zeros(n: usize) -> Bytes {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let mib = vec![0u8; 1 << 20];
        for _ in 0..n >> 20 {
            gz.write_all(&mib).unwrap();
        }
        gz.write_all(&mib[..n % (1 << 20)]).unwrap();
        gz.finish().unwrap().into()
    }

    /// One zstd frame of 128 KiB RLE blocks of zeros, 4 bytes a block, `blocks` of them.
    fn zstd_zeros(blocks: usize) -> Bytes {
        // Magic, a descriptor with no options, a 128 KiB window.
        let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
        for i in 0..blocks {
            let header = u32::from(i + 1 == blocks) | (1 << 1) | ((128 * 1024) << 3);
            f.extend_from_slice(&header.to_le_bytes()[..3]);
            f.push(0);
        }
        f.into()
    }

    #[test]
    fn bodies_within_the_caps_round_trip() {
        let text: Vec<u8> = (0..20_000)
            .flat_map(|i| format!("item-{i}\0").into_bytes())
            .collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(decode(Encoding::Gzip, gz.into(), CAPS).unwrap(), text);
        let zst = ruzstd::encoding::compress_to_vec(
            &text[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(decode(Encoding::Zstd, zst.into(), CAPS).unwrap(), text);
        assert_eq!(zstd_zeros(3).len(), 6 + 12);
        assert_eq!(
            decode(Encoding::Zstd, zstd_zeros(3), CAPS).unwrap().len(),
            3 * 128 * 1024
        );
        let plain = Bytes::from(text.clone());
        let same = decode(Encoding::Identity, plain.clone(), CAPS).unwrap();
        assert_eq!(same.as_ptr(), plain.as_ptr(), "a plain body is not copied");
    }

    #[test]
    fn bombs_stop_at_the_ratio_long_before_the_cap() {
        for bomb in [gzip_zeros(16 << 20), zstd_zeros(128)] {
            let (code, reason) = status(decode(
                if bomb[0] == 0x1f {
                    Encoding::Gzip
                } else {
                    Encoding::Zstd
                },
                bomb,
                CAPS,
            ));
            assert_eq!(code, 413, "{reason}");
            assert!(reason.contains("100 times its compressed size"), "{reason}");
        }
    }

    #[test]
    fn the_output_cap_holds_whatever_the_ratio() {
        let caps = Caps {
            decoded: 3 << 20,
            ratio: u64::MAX,
        };
        for (encoding, bomb) in [
            (Encoding::Gzip, gzip_zeros(16 << 20)),
            (Encoding::Zstd, zstd_zeros(128)),
        ] {
            let (code, reason) = status(decode(encoding, bomb, caps));
            assert_eq!(code, 413, "{reason}");
            assert!(reason.contains("more than 3145728 bytes"), "{reason}");
        }
        assert_eq!(
            status(decode(Encoding::Gzip, gzip_zeros(3 << 20), caps)).0,
            200,
            "exactly the cap is fine"
        );
        let big = Bytes::from(vec![b'a'; (3 << 20) + 1]);
        assert_eq!(status(decode(Encoding::Identity, big, caps)).0, 413);
    }

    #[test]
    fn huge_zstd_windows_and_corrupt_bodies_are_refused() {
        // A 1 GiB window (exponent 20).
        let mut wide = zstd_zeros(1).to_vec();
        wide[5] = 20 << 3;
        assert_eq!(zstd_window(&wide), Some(1 << 30));
        assert_eq!(status(decode(Encoding::Zstd, wide.into(), CAPS)).0, 413);
        // Single segment, 2-byte content size 1000 (stored as 1000 - 256).
        let single = [0x28, 0xb5, 0x2f, 0xfd, 0x60, 0xe8, 0x02];
        assert_eq!(zstd_window(&single), Some(1000));
        for (encoding, junk) in [(Encoding::Gzip, "nope"), (Encoding::Zstd, "nope")] {
            assert_eq!(status(decode(encoding, junk.into(), CAPS)).0, 400);
        }
        let mut cut = gzip_zeros(1000).to_vec();
        cut.truncate(cut.len() - 4);
        assert_eq!(status(decode(Encoding::Gzip, cut.into(), CAPS)).0, 400);
    }

    #[test]
    fn records_split_in_place_and_are_counted() {
        let format = Format {
            delimiter: '\0',
            separator: Some('\x1f'),
            max_records: 3,
            max_item: 10,
        };
        let p = Patterns::default();
        let (r, rejected) = split_records(b"k\x1fa\0b\0\0c\0", format, &p).unwrap();
        let items: Vec<&str> = r.iter().map(|r| r.item.as_str()).collect();
        assert_eq!(items, ["a", "b", "c"]);
        assert_eq!(rejected, Rejected::default());
        assert_eq!(r[0].hash, bloom_hash(b"k"));
        assert_eq!(r[1].hash, bloom_hash(b"b"));
        let four = split_records(b"a\0b\0c\0d", format, &p);
        assert!(matches!(four, Err(ApiError::Client(s, _)) if s == 413));
        // Bad records are rejected one by one; the good ones around them are taken.
        let roomy = Format {
            max_records: 10,
            ..format
        };
        let (r, rejected) = split_records(b"k\x1f\0ok\0elevenbytes\0\xff\xfe", roomy, &p).unwrap();
        let items: Vec<&str> = r.iter().map(|r| r.item.as_str()).collect();
        assert_eq!(items, ["ok"]);
        assert_eq!(rejected.count, 3);
        assert!(rejected.first.unwrap().contains("items are 1 to 10 bytes"));
        // A delimiter of several bytes.
        let wide = Format {
            delimiter: '\u{2028}',
            ..format
        };
        let (r, _) = split_records("a\u{2028}b\u{2028}".as_bytes(), wide, &p).unwrap();
        assert_eq!(r.len(), 2);
    }

    proptest::proptest! {
        /// Any body under any encoding: decoded within the caps or refused with a 4xx, never
        /// a panic; what is split is within the record and item bounds.
        #[test]
        fn any_body_is_decoded_within_its_caps_and_split_within_bounds(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..2000),
            encoding in proptest::sample::select(vec![Encoding::Identity, Encoding::Gzip, Encoding::Zstd]),
            delimiter in proptest::sample::select(vec!['\n', '\0', ',']),
            separator in proptest::option::of(proptest::sample::select(vec!['\t', ' ', '|'])),
        ) {
            let caps = Caps { decoded: 4096, ratio: 10 };
            match decode(encoding, Bytes::from(body), caps) {
                Ok(decoded) => {
                    proptest::prop_assert!(decoded.len() as u64 <= caps.decoded);
                    let format = Format { delimiter, separator, max_records: 50, max_item: 64 };
                    match split_records(&decoded, format, &Patterns::default()) {
                        Ok((records, _)) => proptest::prop_assert!(records.len() <= 50),
                        Err(ApiError::Client(s, _)) => proptest::prop_assert!(s.is_client_error()),
                        Err(e) => proptest::prop_assert!(false, "{e}"),
                    }
                }
                Err(ApiError::Client(s, _)) => proptest::prop_assert!(s.is_client_error()),
                Err(e) => proptest::prop_assert!(false, "{e}"),
            }
        }

        /// A real compressed body with random bytes changed: the same.
        #[test]
        fn mutated_compressed_bodies_are_decoded_or_refused(
            text in "[a-z\n]{0,3000}",
            flips in proptest::collection::vec((proptest::num::usize::ANY, proptest::num::u8::ANY), 1..8),
            zstd_encoded in proptest::bool::ANY,
        ) {
            let mut packed = if zstd_encoded {
                zstd::bulk::compress(text.as_bytes(), 3).unwrap()
            } else {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(text.as_bytes()).unwrap();
                gz.finish().unwrap()
            };
            for (at, b) in flips {
                let n = packed.len();
                packed[at % n] ^= b;
            }
            let encoding = if zstd_encoded { Encoding::Zstd } else { Encoding::Gzip };
            match decode(encoding, Bytes::from(packed), Caps { decoded: 8192, ratio: 100 }) {
                Ok(d) => proptest::prop_assert!(d.len() <= 8192),
                Err(ApiError::Client(s, _)) => proptest::prop_assert!(s.is_client_error()),
                Err(e) => proptest::prop_assert!(false, "{e}"),
            }
        }
    }
}
