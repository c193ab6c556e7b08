//! The one reader of item lines: a byte stream, plain, gzip or zstd (told by its magic bytes),
//! one item a line, handed on in batches so that memory stays bounded whatever the size.
//!
//! ```text
//! item\n          an item (a trailing \r is dropped: CRLF files read the same)
//! \n              an empty line: skipped
//! any other line  not UTF-8, over the longest item (`TRACKER_MAX_ITEM`), or holding NUL: the whole stream is
//!                 refused at that line (the batches before it were handed on)
//! ```

use std::io::{BufRead, BufReader, Read};

/// Items a batch holds at most.
pub const BATCH: usize = 10_000;

/// Why a stream of items was refused, with the (1-based) line.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The stream could not be read (or decompressed) there.
    #[error("reading line {line}: {detail}")]
    Read {
        /// The line being read.
        line: u64,
        /// What went wrong.
        detail: String,
    },
    /// A line that is no item: not UTF-8, longer than the longest item (the second), or
    /// holding NUL.
    #[error("line {0} is not UTF-8, too long or has NUL (an item is at most {1} bytes)")]
    Bad(u64, usize),
}

/// Reads the items of `raw`, decompressing it if it is gzip or zstd, and hands them to `sink`
/// in batches of at most [`BATCH`]; stops quietly when `sink` returns false (nobody wants
/// more). Blocking: run it off the async workers.
pub fn read_items(
    raw: impl Read,
    max_item: usize,
    mut sink: impl FnMut(Vec<String>) -> bool,
) -> Result<(), LineError> {
    let read_error = |line, e: std::io::Error| LineError::Read {
        line,
        detail: e.to_string(),
    };
    let mut raw = BufReader::with_capacity(1 << 16, raw);
    let magic = raw
        .fill_buf()
        .map_err(|e| read_error(1, e))?
        .get(..4)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let reader: Box<dyn Read> = if magic.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::MultiGzDecoder::new(raw))
    } else if magic == [0x28, 0xb5, 0x2f, 0xfd] {
        let decoder =
            ruzstd::decoding::StreamingDecoder::new(raw).map_err(|e| LineError::Read {
                line: 1,
                detail: format!("zstd: {e}"),
            })?;
        Box::new(decoder)
    } else {
        Box::new(raw)
    };
    let mut batch = Vec::with_capacity(BATCH);
    for (n, line) in (1..).zip(BufReader::with_capacity(1 << 16, reader).split(b'\n')) {
        let line = line.map_err(|e| read_error(n, e))?;
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            continue;
        }
        match std::str::from_utf8(line) {
            Ok(s) if s.len() <= max_item && !s.contains('\0') => batch.push(s.to_string()),
            _ => return Err(LineError::Bad(n, max_item)),
        }
        if batch.len() >= BATCH && !sink(std::mem::take(&mut batch)) {
            return Ok(());
        }
    }
    if !batch.is_empty() {
        sink(batch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_ITEM_LEN;
    use std::io::Write;

    /// The batches read from `raw`, or the refusal.
    fn read(raw: &[u8]) -> Result<Vec<Vec<String>>, LineError> {
        let mut batches = Vec::new();
        read_items(raw, MAX_ITEM_LEN, |b| {
            batches.push(b);
            true
        })
        .map(|()| batches)
    }

    fn items(names: &[&str]) -> Vec<Vec<String>> {
        vec![names.iter().map(|s| s.to_string()).collect()]
    }

    #[test]
    fn lines_are_items_crlf_read_the_same_and_empty_lines_are_skipped() {
        assert_eq!(read(b"a\nb\r\n\n\r\nc"), Ok(items(&["a", "b", "c"])));
        assert_eq!(read(b""), Ok(vec![]));
        assert_eq!(read(b"\n\n"), Ok(vec![]));
    }

    #[test]
    fn gzip_and_zstd_are_decompressed() {
        let plain = b"one\ntwo\r\nthree\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(plain).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(read(&gz), Ok(items(&["one", "two", "three"])));
        // Two gzip members read as one stream, as `cat a.gz b.gz` makes.
        assert_eq!(
            read(&[gz.clone(), gz].concat()).unwrap()[0].len(),
            6,
            "concatenated gzip"
        );
        let zst = ruzstd::encoding::compress_to_vec(
            &plain[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(read(&zst), Ok(items(&["one", "two", "three"])));
    }

    #[test]
    fn a_bad_line_refuses_the_stream_at_that_line() {
        let long = format!("ok\n{}\n", "x".repeat(MAX_ITEM_LEN + 1));
        assert_eq!(read(long.as_bytes()), Err(LineError::Bad(2, MAX_ITEM_LEN)));
        let longest = "x".repeat(MAX_ITEM_LEN);
        assert_eq!(read(longest.as_bytes()), Ok(items(&[&longest])));
        assert_eq!(read(b"a\n\nb\0c\n"), Err(LineError::Bad(3, MAX_ITEM_LEN)));
        assert_eq!(read(b"a\n\xff\xfe\n"), Err(LineError::Bad(2, MAX_ITEM_LEN)));
    }

    #[test]
    fn a_broken_compressed_stream_is_refused() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"a\nb\n").unwrap();
        let gz = gz.finish().unwrap();
        assert!(matches!(
            read(&gz[..gz.len() - 6]),
            Err(LineError::Read { .. })
        ));
        assert!(matches!(
            read(&[0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xff]),
            Err(LineError::Read { line: 1, .. })
        ));
    }

    #[test]
    fn batches_hold_at_most_batch_items_and_a_sink_that_stops_ends_the_reading() {
        let many: String = (0..BATCH * 2 + 5).map(|i| format!("{i}\n")).collect();
        let sizes: Vec<usize> = read(many.as_bytes())
            .unwrap()
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, [BATCH, BATCH, 5]);
        let mut calls = 0;
        let stopped = read_items(many.as_bytes(), MAX_ITEM_LEN, |_| {
            calls += 1;
            false
        });
        assert_eq!((stopped, calls), (Ok(()), 1));
    }
}
