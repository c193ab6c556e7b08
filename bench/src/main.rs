//! The load generator: starts a private Redis and the release tracker, then measures warrior
//! request+done pairs, multi=100 claims, backfeed, and the ceiling of the same scripts called
//! directly. Prints figures and the command that produced them. Run: `make bench`. Other modes:
//! `--viewers` (viewers.rs), `--attack` (hostile.rs), `--chaos` (chaos.rs, `make chaos`),
//! `--against BIN` (against.rs: this build and another, alternated in one run).

use std::process::Command;

mod against;
mod bullmq;
mod chaos;
mod fsync;
mod hostile;
mod load;
mod memory;
mod rig;
mod viewers;

use load::{
    backfeed, ceiling, multi, pairs, pairs_of, percentile, project, CONNECTIONS, CROWD, SECONDS,
};

/// CPU seconds (user + kernel) of this process's children that have exited and been waited
/// for: read around a `wrk` run (`Command::output` waits for it), the load generator's own cost.
fn exited_children_cpu() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

/// The number after `prefix` on a line of `text` (a figure wrk or its script printed); stops
/// the run, showing `text`, when there is none, rather than print a figure it could not read.
fn figure_after(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no figure after {prefix:?} in this output:\n{text}"))
}

/// Runs `wrk` with `args` and returns its output and the CPU seconds it used itself.
fn run_wrk(args: &mut Command) -> (String, f64) {
    let before = exited_children_cpu();
    let out = args.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        exited_children_cpu() - before,
    )
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--viewers") {
        return viewers::run().await;
    }
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--chaos") {
        return chaos::run(&args).await;
    }
    if let Some(at) = args.iter().position(|a| a == "--attack") {
        return hostile::attack_for(&args[at + 1..]).await;
    }
    if args.iter().any(|a| a == "--against") {
        return against::run(&args);
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // `--cluster`: Redis is a local cluster of 3 masters (the `spread` phase puts its projects
    // on several of them).
    let on_cluster = std::env::args().any(|a| a == "--cluster");
    let rig = rig::Rig::start("bench", 8, on_cluster).await;
    let (dir, url, store, base) = (&rig.dir, &rig.url, &rig.store, &rig.base);
    let meter = || rig.meter();
    println!("# tracker bench: {CONNECTIONS} connections, {SECONDS} s per phase, redis {url}");
    // `--phases a,b`: only those phases (pairs, crowd, spread, ceiling, half, multi, backfeed,
    // wrk, floor, bullmq, hostile; fsync only when named, as it turns on the append-only file and takes a
    // minute; memory only when named, as it takes a quarter of an hour).
    let args: Vec<String> = std::env::args().collect();
    let only = args
        .iter()
        .position(|a| a == "--phases")
        .and_then(|i| args.get(i + 1))
        .map(|p| p.split(',').map(str::to_string).collect::<Vec<_>>());
    let run = |phase: &str| only.as_ref().is_none_or(|o| o.iter().any(|p| p == phase));
    let named = |phase: &str| only.as_ref().is_some_and(|o| o.iter().any(|p| p == phase));
    // Enough items that no phase runs dry on this machine (about 3x the rates seen).
    for (slug, items, phase) in [
        ("bench", 600_000, "pairs"),
        ("crowd", 600_000, "crowd"),
        ("multi", 5_000_000, "multi"),
        ("direct", 600_000, "ceiling"),
        ("paced", 200_000, "half"),
        ("wrk", 600_000, "wrk"),
        ("hostile", 400_000, "hostile"),
        ("spread0", 200_000, "spread"),
        ("spread1", 200_000, "spread"),
        ("spread2", 200_000, "spread"),
        ("spread3", 200_000, "spread"),
    ] {
        if run(phase) || (phase == "pairs" && (run("half") || run("hostile"))) {
            project(store, slug, items).await;
        } else {
            project(store, slug, 0).await;
        }
    }
    if named("fsync") {
        project(store, "fsync", fsync::ITEMS).await;
    }
    let mut peak_rate = 0.0;
    let mut last_redis_us = None;
    let by_command = std::env::var_os("BENCH_COMMANDSTATS").is_some();
    if run("pairs") || run("half") || run("hostile") {
        let m = meter();
        let stats0 = rig::commandstats(store).await;
        peak_rate = phase_pairs(base).await;
        let line = m.report(peak_rate * SECONDS as f64, "pair");
        println!("{line}");
        if by_command {
            rig::print_commandstats(store, &stats0, peak_rate * SECONDS as f64).await;
        }
        last_redis_us = rig::redis_us(&line);
    }
    // Per unit of work: Redis µs per pair (32 and 256 warriors) and per multi item, for the
    // comparison with BullMQ's per job at the end.
    let mut redis_per: Vec<(&str, f64)> = Vec::new();
    if let Some(us) = last_redis_us.take() {
        redis_per.push(("pair, 32 warriors", us));
    }
    if run("crowd") {
        let m = meter();
        let stats0 = rig::commandstats(store).await;
        let crowd = pairs_of(CROWD, base, &["crowd"], SECONDS, None).await;
        let rate = crowd.pairs as f64 / SECONDS as f64;
        println!(
            "crowd ({CROWD} warriors, request+done over HTTP): {rate:.0}/s; request p50 {:.2} ms p99 {:.2} ms; done p50 {:.2} ms p99 {:.2} ms{}",
            percentile(&crowd.request, 0.5),
            percentile(&crowd.request, 0.99),
            percentile(&crowd.done, 0.5),
            percentile(&crowd.done, 0.99),
            crowd.failures()
        );
        let line = m.report(rate * SECONDS as f64, "pair");
        println!("{line}");
        if by_command {
            rig::print_commandstats(store, &stats0, rate * SECONDS as f64).await;
        }
        redis_per.extend(rig::redis_us(&line).map(|us| ("pair, 256 warriors", us)));
    }
    if run("spread") {
        let slugs = ["spread0", "spread1", "spread2", "spread3"];
        let m = meter();
        let spread = pairs(base, &slugs, SECONDS, None).await;
        let rate = spread.pairs as f64 / SECONDS as f64;
        let placed: Vec<String> = slugs.iter().map(|s| rig.placement(s)).collect();
        println!(
            "spread (pairs over 4 projects: {}): {rate:.0}/s; request p99 {:.2} ms; done p99 {:.2} ms{}",
            placed.join(", "),
            percentile(&spread.request, 0.99),
            percentile(&spread.done, 0.99),
            spread.failures()
        );
        println!("{}", m.report(rate * SECONDS as f64, "pair"));
    }
    if run("ceiling") {
        let m = rig.meter_of_self();
        let batched = ceiling(store, "direct", SECONDS, true).await as f64 / SECONDS as f64;
        let batched_cpu = m.report(batched * SECONDS as f64, "pair");
        let single = ceiling(store, "direct", SECONDS, false).await as f64 / SECONDS as f64;
        let versus = if peak_rate > 0.0 {
            format!("; HTTP/ceiling = {:.0} %", 100.0 * peak_rate / batched)
        } else {
            String::new()
        };
        println!(
            "ceiling (same scripts without HTTP, {CONNECTIONS} in flight): batched as over HTTP \
             {batched:.0} pairs/s, one script call each {single:.0} pairs/s{versus}"
        );
        // The batched run's CPU: what a pair costs the tracker's store side (the batcher, the
        // Redis client, the replies) without HTTP, beside the HTTP floor of `/now`.
        println!("{batched_cpu} (batched)");
    }
    if run("half") {
        // BENCH_PACED_RATE: this rate instead of half of this run's peak, so that two builds'
        // tails are compared at the same offered load.
        let rate = std::env::var("BENCH_PACED_RATE")
            .ok()
            .and_then(|r| r.parse::<f64>().ok())
            .unwrap_or(peak_rate / 2.0);
        let half = pairs(base, &["paced"], SECONDS, Some(rate)).await;
        println!(
            "paced ({:.0} pairs/s offered, peak {peak_rate:.0}): {:.0}/s done; request p99 {:.2} ms (from the scheduled send); done p99 {:.2} ms{}",
            rate,
            half.pairs as f64 / SECONDS as f64,
            percentile(&half.request, 0.99),
            percentile(&half.done, 0.99),
            half.failures()
        );
    }
    if run("multi") {
        let cpu = meter();
        let m = multi(base, "multi", SECONDS).await;
        println!(
            "multi=100 (claim + done of 100): {:.0} items/s",
            m as f64 / SECONDS as f64
        );
        let line = cpu.report(m as f64, "item");
        println!("{line}");
        redis_per.extend(rig::redis_us(&line).map(|us| ("multi=100 item", us)));
    }
    if run("backfeed") {
        let cpu = meter();
        let b = backfeed(base, "bench-benchkey", SECONDS).await;
        println!(
            "backfeed (batches of 1000 new records): {:.0} records/s",
            b as f64 / SECONDS as f64
        );
        println!("{}", cpu.report(b as f64, "record"));
    }
    if run("hostile") {
        hostile::run(base, "hostile", "hostile-benchkey", peak_rate).await;
    }
    let wrk = Command::new("wrk").arg("--version").output().is_ok();
    let wrk_script = root.join("bench/wrk-pair.lua");
    if run("wrk") && wrk && wrk_script.exists() {
        println!(
            "# wrk -t2 -c32 -d20s --latency -s {} {base}  (SLUG=wrk)",
            wrk_script.display()
        );
        let cpu = meter();
        let (text, wrk_cpu) = run_wrk(
            Command::new("wrk")
                .args(["-t2", "-c32", "-d20s", "--latency", "-s"])
                .arg(&wrk_script)
                .arg(base)
                .env("SLUG", "wrk"),
        );
        println!("{text}");
        // The script's last line: `PAIRS/s (done OK per second): N`.
        {
            let rate = figure_after(&text, "PAIRS/s (done OK per second): ");
            let line = cpu.report(rate * 20.0, "pair");
            println!("{line}");
            // Issue 30 states its 32-connection goal for this script's load.
            redis_per.extend(rig::redis_us(&line).map(|us| ("pair, wrk-pair.lua", us)));
            let wrk_us = wrk_cpu * 1e6 / (rate * 20.0);
            println!(
                "#   wrk's own CPU per pair: {wrk_us:.1} µs (the load generator alone would cap \
                 pairs/s at {:.0} on 2 cores)",
                2e6 / wrk_us.max(0.001)
            );
        }
    }
    if run("floor") && wrk {
        // The HTTP floor: a call that touches no Redis, so what this machine's 2 cores give
        // wrk + the tracker alone; a pair is two calls, so half of it bounds pairs/s.
        println!("# wrk -t2 -c32 -d10s {base}/now  (no Redis: the HTTP bound of this machine)");
        let cpu = meter();
        let (text, wrk_cpu) = run_wrk(
            Command::new("wrk")
                .args(["-t2", "-c32", "-d10s"])
                .arg(format!("{base}/now")),
        );
        println!("{text}");
        {
            let rate = figure_after(&text, "Requests/sec:");
            println!("{}", cpu.report(rate * 10.0, "call"));
            println!(
                "#   wrk's own CPU per call: {:.1} µs",
                wrk_cpu * 1e6 / (rate * 10.0)
            );
        }
    }
    if !wrk {
        println!("# wrk not installed (apt-get install wrk): wrk phases skipped");
    }
    if run("bullmq") {
        bullmq::run(&root, &redis_per);
    }
    // Last: the append-only file it turns on would weigh on any phase after it.
    if named("fsync") && on_cluster {
        println!("# fsync: not on --cluster (it reconfigures one private redis-server)");
    } else if named("fsync") {
        fsync::run(base, url, dir, "fsync").await;
    }
    // Long (about 15 minutes for 10 million items): only when named.
    if named("memory") {
        let items = args
            .iter()
            .position(|a| a == "--memory-items")
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(10_000_000);
        memory::run(&rig, items).await;
        println!("# command: cargo run --release -p bench -- --phases memory [--memory-items N]");
    }
    println!("# command: make bench   (cargo run --release -p bench [-- --phases multi,backfeed])");
    let _ = std::fs::remove_dir_all(dir);
}

async fn phase_pairs(base: &str) -> f64 {
    let peak = pairs(base, &["bench"], SECONDS, None).await;
    let peak_rate = peak.pairs as f64 / SECONDS as f64;
    println!(
        "pairs (request+done over HTTP): {:.0}/s; request p50 {:.2} ms p99 {:.2} ms; done p50 {:.2} ms p99 {:.2} ms",
        peak_rate,
        percentile(&peak.request, 0.5),
        percentile(&peak.request, 0.99),
        percentile(&peak.done, 0.5),
        percentile(&peak.done, 0.99)
    );
    peak_rate
}
