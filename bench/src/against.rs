//! `--against BIN [--rounds N]`: this build against another one (the release binary of an older
//! revision, e.g. built in a worktree of it with `cargo build --release -p server`), the chosen
//! phases (`--phases`, as for a plain run) run for each in turn, `--rounds` times (default 3),
//! the order swapped every round so that neither always runs on a machine still warming. Prints
//! every figure's median for both builds and their ratio, with the runs: a regression shows in
//! one run, under the same load, on the same machine.

use std::{collections::BTreeMap, path::PathBuf, process::Command};

/// One figure of a run: its name (phase and what), and its value.
type Figures = Vec<(String, f64)>;

/// Runs the comparison of `args` (this process's arguments).
pub fn run(args: &[String]) {
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let other = PathBuf::from(value_of("--against").expect("--against BIN: the other build"));
    assert!(
        other.is_file(),
        "--against {}: no such binary (build the older revision's `tracker` first)",
        other.display()
    );
    let rounds: usize = value_of("--rounds").map_or(3, |n| n.parse().expect("--rounds N"));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let this = std::env::var_os("TRACKER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/release/tracker"));
    // The same run, without the comparison's own flags.
    let mut passed = Vec::new();
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        if a == "--against" || a == "--rounds" {
            rest.next();
        } else {
            passed.push(a.clone());
        }
    }
    println!(
        "# against: {} (old) and {} (new), {rounds} rounds of: bench {}",
        other.display(),
        this.display(),
        passed.join(" ")
    );
    let exe = std::env::current_exe().expect("this binary's path");
    let mut runs: BTreeMap<&str, Vec<Figures>> = BTreeMap::new();
    for round in 1..=rounds {
        let mut order = [("old", &other), ("new", &this)];
        if round % 2 == 0 {
            order.reverse();
        }
        for (label, bin) in order {
            let out = Command::new(&exe)
                .args(&passed)
                .env("TRACKER_BIN", bin)
                .output()
                .expect("run the bench");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "the {label} run failed: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let figures = figures(&text);
            println!("# round {round}, {label}: {}", summary(&figures));
            runs.entry(label).or_default().push(figures);
        }
    }
    println!("{}", table(&runs["old"], &runs["new"]));
    println!(
        "# command: cargo run --release -p bench -- --against {} --rounds {rounds} {}",
        other.display(),
        passed.join(" ")
    );
}

/// The figures of one run's output: each phase's rate, and the CPU per unit of the tracker and
/// of Redis that follows it.
fn figures(text: &str) -> Figures {
    let mut out = Vec::new();
    let mut phase = String::new();
    let number = |s: &str| -> Option<f64> {
        let digits: String = s
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        digits.parse().ok()
    };
    for line in text.lines() {
        let started = [
            ("pairs (", "pairs/s"),
            ("spread (", "spread pairs/s"),
            ("crowd (", "crowd pairs/s"),
            ("multi=100 ", "multi items/s"),
            ("backfeed (", "backfeed records/s"),
        ]
        .into_iter()
        .find(|(start, _)| line.starts_with(start));
        if let Some((_, name)) = started {
            phase = name
                .split(' ')
                .next()
                .unwrap_or(name)
                .trim_end_matches("/s")
                .into();
            if let Some(v) = line.split_once("): ").and_then(|(_, r)| number(r)) {
                out.push((name.to_string(), v));
            }
        } else if line.starts_with("# wrk -t2 -c32 -d20s") {
            phase = "wrk".into();
        } else if line.starts_with("# wrk -t2 -c32 -d10s") {
            phase = "floor".into();
        } else if let Some(v) = line.strip_prefix("PAIRS/s (done OK per second): ") {
            out.extend(number(v).map(|v| ("wrk pairs/s".to_string(), v)));
        } else if let Some(v) = line
            .strip_prefix("Requests/sec:")
            .filter(|_| phase == "floor")
        {
            out.extend(number(v).map(|v| ("floor calls/s".to_string(), v)));
        } else if let Some(row) = line
            .strip_prefix("| claim p99 | ")
            .or_else(|| line.strip_prefix("| pairs/s | "))
        {
            // The hostile phase's table: `| claim p99 | 5.12 ms | 689.70 ms | 134.8x | ≤ 2x |`.
            let what = if line.starts_with("| claim") {
                "claim p99"
            } else {
                "pairs/s"
            };
            let cells: Vec<&str> = row.split(" | ").collect();
            for (cell, when) in cells.iter().zip(["alone", "under attack", "ratio"]) {
                out.extend(number(cell).map(|v| (format!("hostile {what} {when}"), v)));
            }
        } else if let Some(cpu) = line.strip_prefix("#   CPU per ") {
            // `#   CPU per pair: tracker 57.7 µs, redis 64.4 µs`
            let Some((unit, parts)) = cpu.split_once(": ") else {
                continue;
            };
            for part in parts.split(", ") {
                if let Some((who, v)) = part.split_once(' ') {
                    out.extend(number(v).map(|v| (format!("{phase} {who} µs/{unit}"), v)));
                }
            }
        }
    }
    out
}

/// One run's figures on a line.
fn summary(figures: &Figures) -> String {
    figures
        .iter()
        .map(|(name, v)| format!("{name} {v:.1}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// A Markdown table: every figure both builds gave, its median for each, and new / old.
fn table(old: &[Figures], new: &[Figures]) -> String {
    let of = |runs: &[Figures], name: &str| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| r.iter().find(|(n, _)| n == name).map(|(_, v)| *v))
            .collect()
    };
    let mut rows = vec![
        "| figure | old (median) | new (median) | new / old | old runs | new runs |".to_string(),
        "|---|---|---|---|---|---|".to_string(),
    ];
    let names = old
        .first()
        .map(|r| r.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>());
    for name in names.unwrap_or_default() {
        let (o, n) = (of(old, &name), of(new, &name));
        let list = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let (mo, mn) = (median(o.clone()), median(n.clone()));
        rows.push(format!(
            "| {name} | {mo:.1} | {mn:.1} | {:.2} | {} | {} |",
            mn / mo,
            list(&o),
            list(&n)
        ));
    }
    rows.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_of_a_run_are_read_with_their_phase() {
        let text = "# tracker bench: 32 connections\n\
            pairs (request+done over HTTP): 9892/s; request p50 1.41 ms p99 3.47 ms\n\
            #   CPU per pair: tracker 57.7 µs, redis 64.4 µs\n\
            multi=100 (claim + done of 100): 98320 items/s\n\
            #   CPU per item: tracker 1.9 µs, redis 10.0 µs\n\
            # wrk -t2 -c32 -d20s --latency -s bench/wrk-pair.lua http://x  (SLUG=wrk)\n\
            Requests/sec:  25062.62\n\
            PAIRS/s (done OK per second): 12531.3\n\
            #   CPU per pair: tracker 56.2 µs, redis 53.1 µs\n\
            # wrk -t2 -c32 -d10s http://x/now  (no Redis: the HTTP bound of this machine)\n\
            Requests/sec:  90000.5\n\
            #   CPU per call: tracker 9.0 µs, redis 0.1 µs\n\
            | pairs/s | 4838 | 4514 | 93 % | ≥ 80 % |\n\
            | claim p99 | 5.12 ms | 689.70 ms | 134.8x | ≤ 2x |\n";
        let f = figures(text);
        let get = |n: &str| f.iter().find(|(name, _)| name == n).map(|(_, v)| *v);
        assert_eq!(get("pairs/s"), Some(9892.0));
        assert_eq!(get("pairs tracker µs/pair"), Some(57.7));
        assert_eq!(get("multi items/s"), Some(98320.0));
        assert_eq!(get("multi redis µs/item"), Some(10.0));
        assert_eq!(get("wrk pairs/s"), Some(12531.3));
        assert_eq!(get("wrk tracker µs/pair"), Some(56.2));
        assert_eq!(get("floor calls/s"), Some(90000.5));
        assert_eq!(get("floor tracker µs/call"), Some(9.0));
        assert_eq!(get("hostile pairs/s under attack"), Some(4514.0));
        assert_eq!(get("hostile claim p99 alone"), Some(5.12));
        assert_eq!(get("hostile claim p99 ratio"), Some(134.8));
        assert_eq!(f.len(), 18);
        let t = table(&[f.clone(), f.clone()], std::slice::from_ref(&f));
        assert!(t.contains("| pairs/s | 9892.0 | 9892.0 | 1.00 |"), "{t}");
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
    }
}
