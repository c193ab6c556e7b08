//! `/`: every project with its state, progress, current rate, a day's sparkline and banner;
//! active projects first.

use crate::{
    format::{fixed, lower, rate, thousands},
    model::ProjectSummary,
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
            <Sparkline hourly=p.hourly/>
        </li>
    }
}

/// The front page, listing `projects`.
#[component]
pub fn HomePage(mut projects: Vec<ProjectSummary>) -> impl IntoView {
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
        <h1>"Projects"</h1>
        {list}
    }
}
