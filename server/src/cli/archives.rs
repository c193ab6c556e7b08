//! `tracker archives SLUG [NAME]`: a project's log archives, read where any process stored
//! them (the archive directory, or the object store that keeps the segments): listed, or one
//! written to stdout as the panel downloads it.

use super::{stdout::outln, CliError};
use crate::store::{offload::offloader::archive::Archives, Store};
use std::path::Path;

/// Lists the log archives of `slug` (name and bytes, oldest first), or writes archive `name`
/// (gzip NDJSON) to stdout; `archive_dir` is where they are files.
pub async fn run(
    store: &Store,
    slug: &str,
    name: Option<String>,
    archive_dir: &Path,
) -> Result<(), CliError> {
    if store.projects().project(slug).await?.is_none() {
        return Err(CliError::Usage(format!("no such project {slug:?}")));
    }
    let archives = Archives::of(store, archive_dir, slug).await?;
    let place = archives.describe();
    let failed = |e: std::io::Error| CliError::Io(place.clone(), e);
    let Some(name) = name else {
        let files = archives.blocking(|a| a.files()).await.map_err(failed)?;
        for f in files {
            outln!("{}\t{}", f.name, f.bytes);
        }
        return Ok(());
    };
    if !crate::store::offload::offloader::archive::valid_archive_name(&name) {
        return Err(CliError::Usage(format!("not an archive's name: {name:?}")));
    }
    let reader = {
        let wanted = name.clone();
        archives
            .blocking(move |a| a.open(&wanted))
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    CliError::Usage(format!("{slug} has no archive {name:?}"))
                }
                _ => failed(e),
            })?
    };
    // A chunk at a time (1 MiB), off the async threads.
    let mut chunks = std::pin::pin!(reader.chunks());
    while let Some(chunk) = futures::StreamExt::next(&mut chunks).await {
        super::stdout::write_bytes(&chunk.map_err(failed)?);
    }
    Ok(())
}
