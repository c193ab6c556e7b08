//! The private `redis-server` used when `REDIS_URL` is unset: data, append-only file and unix
//! socket under the data directory, no TCP port.
//!
//! A server already answering on the socket (started by an earlier run that was killed, or by
//! the CLI) is reused and left running; one started here is stopped by [`EmbeddedRedis::stop`].

use std::{
    io::{Read, Write},
    os::unix::net::UnixStream,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// A private Redis, started here or found running.
pub struct EmbeddedRedis {
    socket: PathBuf,
    child: Option<tokio::process::Child>,
}

/// Why the private Redis could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Filesystem or process error.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// redis-server did not answer in time.
    #[error("redis-server did not start (see {0})")]
    NotReady(PathBuf),
}

impl EmbeddedRedis {
    /// Finds or starts the private Redis of `data_dir`.
    pub async fn ensure(data_dir: &Path) -> Result<Self, LaunchError> {
        std::fs::create_dir_all(data_dir)
            .map_err(|e| LaunchError::Io(format!("create {}", data_dir.display()), e))?;
        let dir = data_dir
            .canonicalize()
            .map_err(|e| LaunchError::Io(format!("resolve {}", data_dir.display()), e))?;
        let socket = dir.join("redis.sock");
        if ping(&socket) {
            tracing::info!(socket = %socket.display(), "using the private redis-server already running");
            return Ok(Self {
                socket,
                child: None,
            });
        }
        let _ = std::fs::remove_file(&socket);
        let log = dir.join("redis.log");
        let child = tokio::process::Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--unixsocketperm",
                "700",
                "--appendonly",
                "yes",
            ])
            .args([
                "--appendfsync",
                "everysec",
                "--save",
                "",
                "--daemonize",
                "no",
            ])
            .arg("--unixsocket")
            .arg(&socket)
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(&log)
            // Its own process group: Ctrl-C reaches the tracker, which stops Redis after itself.
            .process_group(0)
            .stdin(std::process::Stdio::null())
            .spawn()
            .map_err(|e| LaunchError::Io("start redis-server (is it installed?)".into(), e))?;
        let deadline = Instant::now() + Duration::from_secs(15);
        while !ping(&socket) {
            if Instant::now() > deadline {
                return Err(LaunchError::NotReady(log));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tracing::info!(socket = %socket.display(), "started private redis-server");
        Ok(Self {
            socket,
            child: Some(child),
        })
    }

    /// The URL to connect to it.
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket.display())
    }

    /// Stops the server if it was started here (SIGTERM: Redis flushes its append-only file).
    pub async fn stop(mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Some(pid) = child.id() {
            // SAFETY: sending a signal to our own child process.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
            Ok(_) => tracing::info!("private redis-server stopped"),
            Err(_) => {
                tracing::warn!("redis-server did not stop in 10 s; killing it");
                let _ = child.kill().await;
            }
        }
    }
}

/// Whether a Redis answers `PING` on `socket`.
fn ping(socket: &Path) -> bool {
    let Ok(mut s) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}
