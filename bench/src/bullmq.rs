//! The `bullmq` phase: BullMQ 5 (from npm, `bench/bullmq`) on a private `redis-server` of the
//! same build as the tracker's, two worker processes of concurrency 32 taking jobs with a no-op
//! processor, completed jobs kept; its Redis CPU per job against the tracker's Redis CPU per
//! pair and per multi item measured earlier in the run.

use std::{path::Path, process::Command};

/// Jobs unless `--bullmq-jobs N` says otherwise.
const JOBS: u64 = 200_000;

/// Runs BullMQ and prints its figures, then each of `ours` (what, Redis µs per unit) against
/// its Redis µs per job.
pub fn run(root: &Path, ours: &[(&str, f64)]) {
    let dir = root.join("bench/bullmq");
    if Command::new("node").arg("--version").output().is_err() {
        println!("# bullmq: node is not installed (apt-get install nodejs npm): phase skipped");
        return;
    }
    if !dir.join("node_modules/bullmq").exists() {
        let ok = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "npm ci in {} failed", dir.display());
    }
    let args: Vec<String> = std::env::args().collect();
    let jobs = args
        .iter()
        .position(|a| a == "--bullmq-jobs")
        .and_then(|i| args.get(i + 1))
        .map_or(JOBS, |n| n.parse().expect("--bullmq-jobs N"));
    let data = super::fsync::data_parent().join(format!("bullmq-{:x}", rand::random::<u32>()));
    std::fs::create_dir_all(&data).unwrap();
    let (redis, url) = tests::start_redis(&data);
    let _redis = tests::Killed(redis);
    let socket = url.trim_start_matches("redis+unix://");
    println!("# node bench/bullmq/run.mjs SOCKET {jobs} 2 32   (a private redis-server)");
    let out = Command::new("node")
        .arg(dir.join("run.mjs"))
        .args([socket, &jobs.to_string(), "2", "32"])
        .output()
        .expect("run node");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bullmq run failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let per_job = super::figure_after(&text, "bullmq-redis-us-per-job: ");
    for line in text.lines().filter(|l| !l.starts_with("bullmq-redis")) {
        println!("{line}");
    }
    for (what, us) in ours {
        println!(
            "# redis per {what}: {us:.1} µs = {:.2} of a BullMQ job's {per_job:.1} µs",
            us / per_job
        );
    }
    let _ = std::fs::remove_dir_all(&data);
}
