//! `/`: every project with its state, progress, current rate, warriors at work, contributors of
//! the last 30 days, a day's sparkline and banner, active projects first; above them the world
//! map of warriors ([`map`]), below them the unique contributors of all projects together, this
//! month and the months before.

mod map;

use crate::{
    format::{fixed, lower, rate, thousands},
    model::{Contributors, FleetStats, ProjectSummary},
};
use leptos::prelude::*;
use leptos_meta::Title;

/// Projects that hand out work (active, draining) first, then by title.
fn order(list: &mut [ProjectSummary]) {
    // Each title lowercased once, not at every comparison.
    list.sort_by_cached_key(|p| {
        (
            !matches!(p.state.as_str(), "active" | "draining"),
            lower(&p.title),
        )
    });
}

/// Items per hour over the last day as an SVG polyline.
#[component]
fn Sparkline(hourly: Vec<u64>) -> impl IntoView {
    let top = hourly.iter().copied().max().unwrap_or(0).max(1) as f64;
    let step = 100.0 / (hourly.len().max(2) - 1) as f64;
    let points = hourly
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "{},{}",
                fixed(i as f64 * step, 1),
                fixed(24.0 - *v as f64 / top * 22.0, 1)
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    view! {
        <svg class="spark" viewBox="0 0 100 24" preserveAspectRatio="none" role="img" aria-label="Items per hour, last 24 hours">
            <polyline class="line c0" points=points></polyline>
        </svg>
    }
}

fn card(p: ProjectSummary) -> impl IntoView {
    let total = p.counts.todo + p.counts.out + p.counts.done;
    let pct = if total == 0 {
        0.0
    } else {
        100.0 * p.counts.done as f64 / total as f64
    };
    view! {
        <li class="card project">
            <div class="project-head">
                <a href=format!("/{}/", p.slug)>{p.title}</a>
                <span class=format!("badge state-{}", p.state) aria-label="State">{p.state.clone()}</span>
            </div>
            {(!p.banner.is_empty()).then(|| view! { <p class="banner">{p.banner}</p> })}
            <progress max="100" value=fixed(pct, 1)></progress>
            <div class="project-figures">
                <span>
                    {format!("{} / {} done", thousands(p.counts.done), thousands(total))}
                </span>
                <span class="muted">{format!("{} items/s", rate(p.items_per_s))}</span>
            </div>
            <div class="project-figures">
                <span class="warriors" title="Downloaders calling the tracker for this project now">
                    {match p.warriors {
                        1 => "1 warrior at work".to_string(),
                        n => format!("{} warriors at work", thousands(n)),
                    }}
                </span>
                <span class="muted">
                    {match p.contributors_30d {
                        1 => "1 contributor, last 30 days".to_string(),
                        n => format!("{} contributors, last 30 days", thousands(n)),
                    }}
                </span>
            </div>
            <Sparkline hourly=p.hourly/>
        </li>
    }
}

/// `2024-03` as `Mar 2024` (anything else as it is).
fn month_label(month: &str) -> String {
    const NAMES: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    month
        .split_once('-')
        .and_then(|(y, m)| Some(format!("{} {y}", NAMES.get(m.parse::<usize>().ok()? - 1)?)))
        .unwrap_or_else(|| month.to_string())
}

/// Unique contributors of all projects together: this month, then the months before.
fn contributors_card(c: Contributors) -> impl IntoView {
    let now = c.months.first().map_or(0, |m| m.contributors);
    view! {
        <section class="card" aria-label="Contributors">
            <h2>"Contributors, all projects"</h2>
            <p>
                <strong>{format!("{} contributors this month", thousands(now))}</strong>
                <span class="muted">" (each project's card: its last 30 days)"</span>
            </p>
            <ol class="months" aria-label="Contributors per month">
                {c.months.into_iter().map(|m| view! {
                    <li><span class="muted">{month_label(&m.month)}</span> <strong>{thousands(m.contributors)}</strong></li>
                }).collect_view()}
            </ol>
        </section>
    }
}

/// The front page: the map of `fleet`, `projects`, and the monthly `contributors` of them all.
#[component]
pub fn HomePage(
    mut projects: Vec<ProjectSummary>,
    contributors: Contributors,
    fleet: FleetStats,
) -> impl IntoView {
    let list = if projects.is_empty() {
        view! { <p class="muted">"No projects yet."</p> }.into_any()
    } else {
        order(&mut projects);
        view! {
            <ul class="projects" aria-label="Projects">
                {projects.into_iter().map(card).collect_view()}
            </ul>
        }
        .into_any()
    };
    view! {
        <Title text="Projects · Tracker"/>
        <map::WarriorMap fleet/>
        <h1>"Projects"</h1>
        {list}
        {contributors_card(contributors)}
    }
}
