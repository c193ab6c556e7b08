//! What a test app keeps outside Redis: its segments and log archives, read where they live
//! (its directories, or its S3 bucket).

use crate::TestApp;
use std::path::PathBuf;

impl TestApp {
    /// The keys of the objects (segments) of `slug` where its segments live (`offload/`, or
    /// its S3 bucket), in order.
    pub async fn segment_objects(&self, slug: &str) -> Vec<String> {
        let (storage, dir) = (self.store.storage().clone(), format!("{slug}/"));
        tokio::task::spawn_blocking(move || storage.list(&dir))
            .await
            .expect("a listing thread")
            .expect("list the segments")
            .into_iter()
            .map(|o| o.key)
            .collect()
    }

    /// The log archive directory of project `slug` (it carries the project's files tag), where
    /// its archives are files (they are objects when the segments are: [`TestApp::archives`]).
    pub async fn archive_dir(&self, slug: &str) -> PathBuf {
        self.archives(slug)
            .await
            .local_dir()
            .expect("the project's archives are files")
    }

    /// The log archives of project `slug`, files or objects.
    pub async fn archives(
        &self,
        slug: &str,
    ) -> server::store::offload::offloader::archive::Archives {
        server::store::offload::offloader::archive::Archives::of(
            &self.store,
            &self.dir.join("archive"),
            slug,
        )
        .await
        .expect("the project's archives")
    }

    /// The names of the log archives of project `slug`, oldest first, and each one's entries
    /// (its lines, as JSON), read where they live.
    pub async fn archived(&self, slug: &str) -> Vec<(String, Vec<serde_json::Value>)> {
        let archives = self.archives(slug).await;
        tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let mut files = archives.files().expect("the archives are listed");
            files.sort_by(|a, b| a.name.cmp(&b.name));
            files
                .into_iter()
                .map(|f| {
                    let mut text = String::new();
                    flate2::read::GzDecoder::new(archives.open(&f.name).expect("an archive opens"))
                        .read_to_string(&mut text)
                        .expect("an archive reads");
                    let lines = text
                        .lines()
                        .map(|l| serde_json::from_str(l).expect("an archive's line is JSON"))
                        .collect();
                    (f.name, lines)
                })
                .collect()
        })
        .await
        .expect("reading the archives")
    }
}
