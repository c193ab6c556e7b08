//! Compressed copies of the site's bundles (`pkg/*.wasm`, `*.js`, `*.css`), written beside
//! them as `FILE.br` and `FILE.gz` so that `/pkg` serves each browser the smallest form it
//! accepts without compressing anything per request (see [`crate::routes`]).
//!
//! The tracker makes them when it starts, in the background: a copy that is missing, or older
//! than its file (a rebuild), is written again. Until then a bundle goes out gzip-compressed on
//! the fly. Each copy is written to a temporary name and renamed, so a reader (or a second
//! tracker doing the same) never sees half of one.

use std::{
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
    time::SystemTime,
};

/// The file endings worth compressing.
const COMPRESSIBLE: [&str; 3] = ["wasm", "js", "css"];

/// The compressed forms, by file ending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `FILE.br`, brotli at its best quality (slow to make, fastest to send).
    Brotli,
    /// `FILE.gz`, gzip at level 9.
    Gzip,
}

impl Encoding {
    /// Both forms.
    pub const ALL: [Encoding; 2] = [Encoding::Brotli, Encoding::Gzip];

    /// The ending of the copy's name.
    pub fn ending(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Gzip => "gz",
        }
    }

    /// `data` compressed.
    pub fn compress(self, data: &[u8]) -> io::Result<Vec<u8>> {
        match self {
            Encoding::Brotli => {
                let params = brotli::enc::BrotliEncoderParams {
                    quality: 11,
                    lgwin: 22,
                    ..Default::default()
                };
                let mut out = Vec::with_capacity(data.len() / 3);
                brotli::BrotliCompress(&mut &data[..], &mut out, &params)?;
                Ok(out)
            }
            Encoding::Gzip => {
                let mut gz = flate2::write::GzEncoder::new(
                    Vec::with_capacity(data.len() / 3),
                    flate2::Compression::best(),
                );
                gz.write_all(data)?;
                gz.finish()
            }
        }
    }
}

/// The path of `file`'s copy in `encoding`.
pub fn copy_path(file: &Path, encoding: Encoding) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".");
    name.push(encoding.ending());
    PathBuf::from(name)
}

fn modified(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Writes every missing or outdated compressed copy of the bundles in `dir`; returns the copies
/// written. A directory that does not exist has nothing to compress.
pub fn refresh(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| COMPRESSIBLE.contains(&x))
        })
        .collect();
    files.sort();
    let mut written = Vec::new();
    for file in files {
        let Some(source_time) = modified(&file) else {
            continue;
        };
        let mut data = None;
        for encoding in Encoding::ALL {
            let copy = copy_path(&file, encoding);
            if modified(&copy).is_some_and(|t| t >= source_time) {
                continue;
            }
            let data = match &mut data {
                Some(d) => d,
                None => data.insert(fs::read(&file)?),
            };
            let packed = encoding.compress(data)?;
            let tmp =
                copy.with_extension(format!("{}.tmp{}", encoding.ending(), std::process::id()));
            fs::write(&tmp, packed)?;
            fs::rename(&tmp, &copy)?;
            written.push(copy);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn copies_are_made_once_decode_to_the_file_and_follow_a_rebuild() {
        let dir = std::env::temp_dir().join(format!("precompress-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let wasm = dir.join("app.wasm");
        let body: Vec<u8> = (0..50_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        fs::write(&wasm, &body).unwrap();
        fs::write(dir.join("notes.txt"), "not a bundle").unwrap();

        let written = refresh(&dir).unwrap();
        assert_eq!(
            written,
            vec![
                copy_path(&wasm, Encoding::Brotli),
                copy_path(&wasm, Encoding::Gzip)
            ]
        );
        let mut unbrotli = Vec::new();
        brotli::BrotliDecompress(&mut &fs::read(&written[0]).unwrap()[..], &mut unbrotli).unwrap();
        let mut ungz = Vec::new();
        flate2::read::GzDecoder::new(&fs::read(&written[1]).unwrap()[..])
            .read_to_end(&mut ungz)
            .unwrap();
        assert_eq!(unbrotli, body);
        assert_eq!(ungz, body);
        assert!(fs::read(&written[0]).unwrap().len() < body.len() / 4);

        // Up to date: nothing is written again.
        assert!(refresh(&dir).unwrap().is_empty());

        // A rebuilt file (newer than its copies) gets new copies.
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        fs::write(&wasm, b"rebuilt").unwrap();
        fs::File::options()
            .write(true)
            .open(&wasm)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(refresh(&dir).unwrap().len(), 2);
        let mut ungz = Vec::new();
        flate2::read::GzDecoder::new(&fs::read(copy_path(&wasm, Encoding::Gzip)).unwrap()[..])
            .read_to_end(&mut ungz)
            .unwrap();
        assert_eq!(ungz, b"rebuilt");
        assert!(refresh(&dir.join("nope")).unwrap().is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }
}
