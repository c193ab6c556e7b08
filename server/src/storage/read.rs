//! Reading an object (or a file) of a [`super::Storage`]: ranges of an object for the
//! segments' block cache, and a whole object a chunk at a time.

use super::Objects;
use crate::segment::Source;
use object_store::{path::Path as Key, ObjectStoreExt};
use std::io;

/// An object (or file) read from start to end, [`READ_CHUNK`] bytes a call at most: a log
/// archive read or downloaded without holding it whole.
pub struct SourceReader {
    source: Box<dyn Source>,
    offset: u64,
    size: u64,
}

/// The most one read of a [`SourceReader`] asks for: one ranged `GET` of an object store.
pub const READ_CHUNK: usize = 1 << 20;

impl SourceReader {
    /// Reads `source` from its start.
    pub fn new(source: Box<dyn Source>) -> io::Result<SourceReader> {
        let size = source.size()?;
        Ok(SourceReader {
            source,
            offset: 0,
            size,
        })
    }

    /// The next chunk of up to [`READ_CHUNK`] bytes; empty at the end.
    pub fn next_chunk(&mut self) -> io::Result<Vec<u8>> {
        let n = (self.size - self.offset).min(READ_CHUNK as u64) as usize;
        let mut buf = vec![0; n];
        self.source.read_exact_at(&mut buf, self.offset)?;
        self.offset += n as u64;
        Ok(buf)
    }
}

impl SourceReader {
    /// Its chunks as a stream, each read on a blocking thread: a download that never holds
    /// the object whole.
    pub fn chunks(self) -> impl futures::Stream<Item = io::Result<Vec<u8>>> + Send + 'static {
        futures::stream::unfold(Some(self), |reader| async move {
            let mut reader = reader?;
            let read = tokio::task::spawn_blocking(move || (reader.next_chunk(), reader)).await;
            match read {
                Ok((Ok(chunk), _)) if chunk.is_empty() => None,
                Ok((Ok(chunk), reader)) => Some((Ok(chunk), Some(reader))),
                Ok((Err(e), _)) => Some((Err(e), None)),
                Err(e) => Some((Err(io::Error::other(e)), None)),
            }
        })
    }
}

impl io::Read for SourceReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (self.size - self.offset).min(buf.len().min(READ_CHUNK) as u64) as usize;
        self.source.read_exact_at(&mut buf[..n], self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// An object read a range at a time.
pub(super) struct ObjectSource {
    pub(super) objects: Objects,
    pub(super) key: Key,
    pub(super) size: u64,
}

impl Source for ObjectSource {
    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let end = offset + buf.len() as u64;
        if end > self.size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{}: {end} past its {} bytes", self.key, self.size),
            ));
        }
        let got = self.objects.block(
            "get_range",
            self.objects.store.get_range(&self.key, offset..end),
        )?;
        if got.len() != buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: a range of {} bytes answered {}",
                    self.key,
                    buf.len(),
                    got.len()
                ),
            ));
        }
        buf.copy_from_slice(&got);
        Ok(())
    }
}
