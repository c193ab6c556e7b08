//! The charts, drawn as SVG from the chart data: items done, items per hour, bytes per second,
//! and cumulative bytes of the top downloaders; over 1 h, 1 d, 1 w or everything.

use crate::{
    format::{bytes, fixed, rate, thousands},
    model::{downsample, increases, since, ChartData, Leaderboard},
};
use leptos::prelude::*;

const RANGES: [(&str, u64); 4] = [("1 h", 3600), ("1 d", 86_400), ("1 w", 604_800), ("all", 0)];
/// Points per line at most (the series are thinned to this many buckets).
const POINTS: u64 = 240;
const W: f64 = 600.0;
const H: f64 = 150.0;

/// One line of a chart: its name and `(t, value)` points.
#[derive(Clone, PartialEq)]
struct Line {
    name: String,
    /// Colour index (the legend's).
    color: usize,
    points: Vec<(u64, f64)>,
}

/// The chart's time span `(from, to)` in epoch seconds for a range (0: everything).
fn span(charts: &ChartData, now_s: u64, range: u64) -> (u64, u64) {
    let last = charts.items.last().map_or(0, |p| p.0);
    let to = now_s.max(last);
    let from = if range == 0 {
        charts
            .items
            .first()
            .map_or(to.saturating_sub(3600), |p| p.0)
    } else {
        to.saturating_sub(range)
    };
    (from, to.max(from + 60))
}

fn bucket(from: u64, to: u64) -> u64 {
    ((to - from) / POINTS).max(60)
}

/// A cumulative series within the span, thinned; from 0 before its first point and flat after
/// its last one.
fn cumulative(s: &[(u64, u64)], from: u64, to: u64) -> Vec<(u64, f64)> {
    let mut out: Vec<(u64, f64)> = Vec::new();
    if let Some(&(t0, _)) = s.first().filter(|p| p.0 > from) {
        out.push((t0.saturating_sub(60).max(from), 0.0));
    }
    out.extend(
        downsample(since(s, from), bucket(from, to))
            .into_iter()
            .map(|(t, v)| (t.max(from), v as f64)),
    );
    if let Some(&(_, v)) = out.last() {
        out.push((to, v));
    }
    out
}

/// The increase of a cumulative series per bucket, scaled to per `per` seconds.
fn per(s: &[(u64, u64)], from: u64, to: u64, per: f64) -> Vec<(u64, f64)> {
    let b = bucket(from, to);
    increases(s, b, from, to)
        .into_iter()
        .map(|(t, v)| (t, v as f64 * per / b as f64))
        .collect()
}

/// An SVG line chart with its largest value as the scale.
#[component]
fn LineChart(
    title: &'static str,
    lines: Signal<Vec<Line>>,
    span: Signal<(u64, u64)>,
    fmt: fn(f64) -> String,
) -> AnyView {
    let max = move || {
        lines.with(|ls| {
            ls.iter()
                .flat_map(|l| l.points.iter().map(|p| p.1))
                .fold(0.0, f64::max)
        })
    };
    let paths = move || {
        let (from, to) = span.get();
        let top = max().max(1e-9);
        let x = move |t: u64| (t.saturating_sub(from)) as f64 / (to - from) as f64 * W;
        lines
            .get()
            .into_iter()
            .map(move |l| {
                let pts = l
                    .points
                    .iter()
                    .map(|&(t, v)| {
                        format!("{},{}", fixed(x(t), 1), fixed(H - v / top * (H - 4.0), 1))
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                view! {
                    <polyline class=format!("line c{}", l.color % 10) points=pts>
                        <title>{l.name}</title>
                    </polyline>
                }
            })
            .collect_view()
    };
    view! {
        <figure class="chart">
            <figcaption>
                <span>{title}</span>
                <span class="muted">{move || format!("max {}", fmt(max()))}</span>
            </figcaption>
            <svg viewBox=format!("0 0 {} {}", W as u32, H as u32) preserveAspectRatio="none" role="img" aria-label=title>
                <line class="axis" x1="0" y1=H as u32 x2=W as u32 y2=H as u32></line>
                {paths}
            </svg>
        </figure>
    }
    .into_any()
}

/// The charts section, updated live through `charts`.
#[component]
pub fn Charts(board: RwSignal<Leaderboard>, charts: RwSignal<ChartData>) -> AnyView {
    // Opens on the shortest range that holds all the data.
    let range = RwSignal::new(charts.with_untracked(|c| {
        let first = c.items.first().map_or(0, |p| p.0);
        let now = board.with_untracked(|b| b.now / 1000).max(first);
        RANGES
            .iter()
            .map(|r| r.1)
            .find(|&r| r > 0 && now - first <= r)
            .unwrap_or(0)
    }));
    let hidden = RwSignal::new(Vec::<String>::new());
    let now_s = move || board.with(|b| b.now / 1000);
    let span_of = Signal::derive(move || charts.with(|c| span(c, now_s(), range.get())));
    let one = move |name: &str, f: fn(&ChartData, u64, u64) -> Vec<(u64, f64)>| {
        let name = name.to_string();
        Signal::derive(move || {
            let (from, to) = span_of.get();
            vec![Line {
                name: name.clone(),
                color: 0,
                points: charts.with(|c| f(c, from, to)),
            }]
        })
    };
    let items = one("items done", |c, a, b| cumulative(&c.items, a, b));
    let hourly = one("items per hour", |c, a, b| per(&c.items, a, b, 3600.0));
    let bytes_s = one("bytes per second", |c, a, b| per(&c.bytes, a, b, 1.0));
    let per_dl = Signal::derive(move || {
        let (from, to) = span_of.get();
        let hide = hidden.get();
        charts.with(|c| {
            c.downloaders
                .iter()
                .enumerate()
                .filter(|(_, (n, _))| !hide.contains(n))
                .map(|(i, (n, s))| Line {
                    name: n.clone(),
                    color: i,
                    points: cumulative(s, from, to),
                })
                .collect()
        })
    });
    let names = move || {
        charts.with(|c| {
            c.downloaders
                .iter()
                .map(|(n, _)| n.clone())
                .collect::<Vec<_>>()
        })
    };
    view! {
        <section class="card charts" aria-label="Charts">
            <div class="rates-head">
                <h2>"Charts"</h2>
                <div class="segmented" role="group" aria-label="Chart range">
                    {RANGES
                        .iter()
                        .map(|&(label, r)| {
                            view! {
                                <button
                                    type="button"
                                    aria-pressed=move || (range.get() == r).to_string()
                                    on:click=move |_| range.set(r)
                                >
                                    {label}
                                </button>
                            }
                        })
                        .collect_view()}
                </div>
            </div>
            <div class="chart-grid">
                <LineChart title="Items done" lines=items span=span_of fmt=|v| thousands(v as u64)/>
                <LineChart title="Items per hour" lines=hourly span=span_of fmt=rate/>
                <LineChart title="Bytes per second" lines=bytes_s span=span_of fmt=|v| bytes(v as u64)/>
                <LineChart title="Bytes by downloader" lines=per_dl span=span_of fmt=|v| bytes(v as u64)/>
            </div>
            <fieldset class="toggles">
                <legend>"Downloaders in the chart"</legend>
                {move || {
                    names()
                        .into_iter()
                        .enumerate()
                        .map(|(i, n)| {
                            let shown = {
                                let n = n.clone();
                                move || !hidden.with(|h| h.contains(&n))
                            };
                            let toggle = {
                                let n = n.clone();
                                move |_| {
                                    hidden.update(|h| match h.iter().position(|x| *x == n) {
                                        Some(at) => {
                                            h.remove(at);
                                        }
                                        None => h.push(n.clone()),
                                    })
                                }
                            };
                            view! {
                                <label class=format!("toggle c{}", i % 10)>
                                    <input type="checkbox" prop:checked=shown on:change=toggle/>
                                    {n}
                                </label>
                            }
                        })
                        .collect_view()
                }}
            </fieldset>
        </section>
    }
    .into_any()
}
