//! The long chaos run (`make chaos`, issue 18): `bench --chaos [--items N] [--minutes M]
//! [--warriors W]` runs `tests::chaos` with the release tracker, prints its report and the
//! command, and exits non-zero on any violation.

use std::time::Duration;

/// The number after `flag` in `args`, if given.
fn figure(args: &[String], flag: &str) -> Option<f64> {
    let at = args.iter().position(|a| a == flag)?;
    let value = args.get(at + 1)?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{flag} takes a number, not {value:?}")),
    )
}

/// Runs the chaos described by `args` (the rest is [`tests::chaos::Config::long`]).
pub async fn run(args: &[String]) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bin = std::env::var_os("TRACKER_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target/release/tracker"));
    let mut cfg = tests::chaos::Config::long(bin);
    if let Some(n) = figure(args, "--items") {
        cfg.items = n as usize;
    }
    if let Some(m) = figure(args, "--minutes") {
        cfg.chaos = Duration::from_secs_f64(m * 60.0);
    }
    if let Some(w) = figure(args, "--warriors") {
        cfg.warriors = w as usize;
    }
    println!(
        "# bench --chaos --items {} --minutes {} --warriors {} ({})",
        cfg.items,
        cfg.chaos.as_secs_f64() / 60.0,
        cfg.warriors,
        cfg.tracker_bin.display()
    );
    let report = tests::chaos::run(&cfg).await;
    print!("{report}");
    if !report.violations.is_empty() {
        std::process::exit(1);
    }
}
