//! `tracker storage copy`: every object of one storage written to another, checked.

use super::{other, Storage};
use std::io;

/// What [`Storage::copy_to`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Copied {
    /// Objects written.
    pub copied: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Objects the destination held already, the same to the byte.
    pub skipped: u64,
}

pub(super) fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).into()
}

impl Storage {
    /// Copies every object of this storage to `to` (`tracker storage copy`): an object `to`
    /// holds with the same size and SHA-256 is skipped, so a copy stopped half-way is run
    /// again; each one written is read back and its SHA-256 compared, and a difference is an
    /// error. A listing that fails stops the copy (what was copied stays).
    pub fn copy_to(&self, to: &Storage) -> io::Result<Copied> {
        let there: std::collections::HashMap<String, u64> =
            to.list("")?.into_iter().map(|o| (o.key, o.size)).collect();
        let mut done = Copied::default();
        for object in self.list("")? {
            let bytes = self.get_bytes(&object.key)?;
            let want = sha256(&bytes);
            if there.get(&object.key) == Some(&(bytes.len() as u64))
                && sha256(&to.get_bytes(&object.key)?) == want
            {
                done.skipped += 1;
                continue;
            }
            let size = bytes.len() as u64;
            to.put_bytes(&object.key, bytes)?;
            if sha256(&to.get_bytes(&object.key)?) != want {
                return Err(other(format!(
                    "{}: the copy read back differs from the original",
                    object.key
                )));
            }
            done.copied += 1;
            done.bytes += size;
        }
        Ok(done)
    }
}
