//! `/`: every project with its counts.

use crate::{format::thousands, list_projects};
use leptos::prelude::*;
use leptos_meta::Title;

/// The front page.
#[component]
pub fn HomePage() -> impl IntoView {
    let projects = Resource::new(|| (), |_| list_projects());
    view! {
        <Title text="Projects · Tracker"/>
        <h1>"Projects"</h1>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match projects.await {
                    Ok(list) if list.is_empty() => {
                        view! { <p class="muted">"No projects yet."</p> }.into_any()
                    }
                    Ok(list) => {
                        view! {
                            <ul class="projects" aria-label="Projects">
                                {list
                                    .into_iter()
                                    .map(|p| {
                                        let total = p.counts.todo + p.counts.out + p.counts.done;
                                        let pct = if total == 0 {
                                            0.0
                                        } else {
                                            100.0 * p.counts.done as f64 / total as f64
                                        };
                                        view! {
                                            <li class="card project">
                                                <a href=format!("/{}/", p.slug)>{p.title}</a>
                                                <progress max="100" value=format!("{pct:.1}")></progress>
                                                <span class="muted">
                                                    {format!(
                                                        "{} of {} done",
                                                        thousands(p.counts.done),
                                                        thousands(total),
                                                    )}
                                                </span>
                                            </li>
                                        }
                                    })
                                    .collect_view()}
                            </ul>
                        }
                            .into_any()
                    }
                    Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}
