//! A real S3-speaking server for the tests: `s3s-fs` (an S3 protocol server on a local
//! directory, built on the s3s library; `scripts/install-tools.sh test` installs it from
//! crates.io), one per test app, on a free port, with one bucket and a pair of keys: every
//! request the tracker's object store client sends is signed and checked.
//!
//! `TRACKER_TEST_STORAGE=s3` makes every [`crate::TestApp`] keep its segments there
//! ([`crate::TestApp::start`]); `make test` runs the offload tests so, beside their run on a
//! local directory.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// The bucket every test server holds.
pub const BUCKET: &str = "tracker";
const ACCESS_KEY: &str = "tracker-test";
const SECRET_KEY: &str = "tracker-test-secret";

/// A running `s3s-fs`; stopped when dropped.
pub struct S3 {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The directory it keeps its buckets in.
    pub root: PathBuf,
}

/// The `s3s-fs` binary: `S3S_FS_BIN`, or cargo's install directory, or the `PATH`.
pub fn s3s_fs_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("S3S_FS_BIN") {
        return bin.into();
    }
    let cargo_home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo")
        });
    let installed = cargo_home.join("bin/s3s-fs");
    if installed.exists() {
        installed
    } else {
        "s3s-fs".into()
    }
}

/// Whether the tests' apps keep their segments in S3 (`TRACKER_TEST_STORAGE=s3`).
pub fn wanted() -> bool {
    std::env::var("TRACKER_TEST_STORAGE").is_ok_and(|v| v == "s3")
}

/// The `TRACKER_STORAGE` of the bucket's `prefix` on a server (or a proxy of one) on
/// 127.0.0.1:`port`, with its keys.
pub fn storage_url_at(port: u16, prefix: &str) -> String {
    format!(
        "s3://{BUCKET}/{prefix}?aws_endpoint=http://127.0.0.1:{port}&aws_allow_http=true\
         &aws_access_key_id={ACCESS_KEY}&aws_secret_access_key={SECRET_KEY}&aws_region=us-east-1"
    )
}

/// Runs `s3s-fs` on 127.0.0.1:`port` over `root`, and waits until it takes connections.
fn spawn(port: u16, root: &Path) -> Child {
    let child = Command::new(s3s_fs_bin())
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .arg(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("s3s-fs must be installed (make test installs it: scripts/install-tools.sh test)");
    let end = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < end, "s3s-fs did not start on port {port}");
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

impl S3 {
    /// Starts a server keeping its buckets under `dir`/s3, with [`BUCKET`].
    pub fn start(dir: &Path) -> S3 {
        let root = dir.join("s3");
        std::fs::create_dir_all(root.join(BUCKET)).expect("the S3 server's directory");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = spawn(port, &root);
        S3 { child, port, root }
    }

    /// `TRACKER_STORAGE` for objects under `prefix` of [`BUCKET`], with the endpoint and keys
    /// in the URL's query.
    pub fn storage_url(&self, prefix: &str) -> String {
        storage_url_at(self.port, prefix)
    }

    /// Starts it again after [`S3::kill`], on the same port and directory.
    pub fn restart(&mut self) {
        self.kill();
        self.child = spawn(self.port, &self.root);
    }

    /// Its process id (to pause it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server (as a kill would: at once).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        self.kill();
    }
}
