//! Progress of a long command (`tracker items add` of a big file, `tracker check` of a big
//! project): on a terminal, a bar of the bytes read (or items looked at) with their rate and the
//! time left; otherwise (a log, a pipe) a plain line every [`PLAIN_EVERY`] on standard error.

use indicatif::{ProgressBar, ProgressStyle};
use std::{
    io::{IsTerminal, Read},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

/// How often the plain lines come.
pub const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// The progress of one command; shared by the thread that reads and the task that adds.
pub struct Progress {
    what: String,
    /// The input's size in bytes, when known (a file rather than a pipe).
    total: Option<u64>,
    read: AtomicU64,
    items: AtomicU64,
    started: Instant,
    bar: Option<ProgressBar>,
    last_line: Mutex<Instant>,
}

impl Progress {
    /// Progress of `what` over an input of `total` bytes (`None`: unknown); a bar when standard
    /// error is a terminal.
    pub fn new(what: &str, total: Option<u64>) -> Arc<Self> {
        let bar = std::io::stderr().is_terminal().then(|| {
            let (bar, template) = match total {
                Some(n) => (
                    ProgressBar::new(n),
                    "{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}, {eta} left: {msg}",
                ),
                None => (
                    ProgressBar::new_spinner(),
                    "{prefix} {spinner} {bytes} {bytes_per_sec}: {msg}",
                ),
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(what.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Arc::new(Self {
            what: what.to_string(),
            total,
            read: AtomicU64::new(0),
            items: AtomicU64::new(0),
            started: Instant::now(),
            bar,
            last_line: Mutex::new(Instant::now()),
        })
    }

    /// `inner`, counting the bytes read from it.
    pub fn reader<R: Read>(self: &Arc<Self>, inner: R) -> Counted<R> {
        Counted {
            inner,
            progress: Arc::clone(self),
        }
    }

    /// `items` queued so far.
    pub fn items(&self, items: u64) {
        self.items.store(items, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.set_message(self.items_text());
            return;
        }
        let mut last = self.last_line.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() >= PLAIN_EVERY {
            *last = Instant::now();
            eprintln!("{}", self.line());
        }
    }

    /// Clears the bar (the command prints its own result after).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn items_text(&self) -> String {
        let items = self.items.load(Ordering::Relaxed);
        let rate = items as f64 / self.started.elapsed().as_secs_f64().max(0.001);
        format!("{items} new items, {rate:.0}/s")
    }

    /// The plain line: `what: N MB of M MB read (P %), ETA S s; I new items, R/s`.
    fn line(&self) -> String {
        let read = self.read.load(Ordering::Relaxed);
        let mb = |b: u64| b as f64 / 1e6;
        let secs = self.started.elapsed().as_secs_f64().max(0.001);
        let of = match self.total {
            Some(total) if total > 0 => {
                let left = total.saturating_sub(read) as f64 / (read as f64 / secs).max(1.0);
                format!(
                    "{:.1} MB of {:.1} MB read ({:.0} %), {left:.0} s left",
                    mb(read),
                    mb(total),
                    100.0 * read as f64 / total as f64
                )
            }
            _ => format!("{:.1} MB read", mb(read)),
        };
        format!("{}: {of}; {}", self.what, self.items_text())
    }
}

/// Progress counted in items out of a known total (`tracker check`'s scan): a bar on a
/// terminal, else a plain line every [`PLAIN_EVERY`].
pub struct Steps {
    what: String,
    started: Instant,
    bar: Option<ProgressBar>,
    last_line: Mutex<Instant>,
}

impl Steps {
    /// Progress of `what`.
    pub fn new(what: &str) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(0);
            let template =
                "{prefix} [{bar:30}] {human_pos}/{human_len} items, {per_sec}, {eta} left";
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(what.to_string());
            bar
        });
        Self {
            what: what.to_string(),
            started: Instant::now(),
            bar,
            last_line: Mutex::new(Instant::now()),
        }
    }

    /// `done` of `total` items so far.
    pub fn at(&self, done: u64, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_position(done);
            return;
        }
        let mut last = self.last_line.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() >= PLAIN_EVERY {
            *last = Instant::now();
            eprintln!(
                "{}",
                steps_line(&self.what, done, total, self.started.elapsed())
            );
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The plain line: `what: N of M items (P %), R/s, S s left`.
fn steps_line(what: &str, done: u64, total: u64, took: Duration) -> String {
    let rate = done as f64 / took.as_secs_f64().max(0.001);
    let left = total.saturating_sub(done) as f64 / rate.max(1.0);
    let pct = if total == 0 {
        100.0
    } else {
        100.0 * done as f64 / total as f64
    };
    format!("{what}: {done} of {total} items ({pct:.0} %), {rate:.0}/s, {left:.0} s left")
}

/// A reader counting its bytes into a [`Progress`].
pub struct Counted<R> {
    inner: R,
    progress: Arc<Progress>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let at = self.progress.read.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if let Some(bar) = &self.progress.bar {
            bar.set_position(at);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_line_says_how_far_how_fast_and_how_long_is_left() {
        assert_eq!(
            steps_line("check big", 250, 1000, Duration::from_secs(5)),
            "check big: 250 of 1000 items (25 %), 50/s, 15 s left"
        );
        assert_eq!(
            steps_line("check none", 0, 0, Duration::from_secs(1)),
            "check none: 0 of 0 items (100 %), 0/s, 0 s left"
        );
    }

    #[test]
    fn the_plain_line_says_how_far_and_how_fast() {
        let p = Progress::new("items add", Some(2_000_000));
        let mut r = p.reader(&[0u8; 1_000_000][..]);
        std::io::copy(&mut r, &mut std::io::sink()).unwrap();
        p.items.store(500, Ordering::Relaxed);
        let line = p.line();
        assert!(
            line.starts_with("items add: 1.0 MB of 2.0 MB read (50 %), "),
            "{line}"
        );
        assert!(line.contains("; 500 new items, "), "{line}");
    }
}
