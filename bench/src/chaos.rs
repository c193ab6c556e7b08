//! The long chaos run (`make chaos`, issue 18): `bench --chaos [--items N] [--minutes M]
//! [--warriors W] [--object-store]` runs `tests::chaos` with the release tracker, prints its
//! report and the command, and exits non-zero on any violation. `--object-store` keeps the
//! segments and log archives of the three processes (each on its own empty directory) in one
//! bucket of a real S3-speaking server, killed every 30 s and paused 5 s every 45 s.

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
    let objects = args.iter().any(|a| a == "--object-store");
    if objects {
        cfg.object_store = Some(tests::chaos::ObjectFaults {
            kill_every: Duration::from_secs(30),
            pause_every: Duration::from_secs(45),
            pause: Duration::from_secs(5),
        });
    }
    println!(
        "# bench --chaos --items {} --minutes {} --warriors {}{} ({})",
        cfg.items,
        cfg.chaos.as_secs_f64() / 60.0,
        cfg.warriors,
        if objects { " --object-store" } else { "" },
        cfg.tracker_bin.display()
    );
    let report = tests::chaos::run(&cfg).await;
    print!("{report}");
    if !report.violations.is_empty() {
        std::process::exit(1);
    }
}
