//! `/admin/p/SLUG`: one project's queues and claims, with adding items and releasing claims,
//! each previewed (dry run) before it runs.

use super::api::{self, n, Body};
use crate::format::thousands;
use leptos::{prelude::*, task::spawn_local};
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde_json::{json, Value};

/// The queues items can be moved between.
const QUEUES: [&str; 4] = ["todo", "todo:backfeed", "todo:secondary", "todo:redo"];

/// A bulk action waiting for confirmation: what it will do, and the call that does it.
#[derive(Clone)]
struct Pending {
    text: String,
    path: String,
    body: BodyKind,
}

#[derive(Clone)]
enum BodyKind {
    Json(Value),
    Text(String),
}

impl BodyKind {
    fn body(&self) -> Body {
        match self {
            BodyKind::Json(v) => Body::Json(v.clone()),
            BodyKind::Text(t) => Body::Text(t.clone()),
        }
    }
}

/// The project page of the panel.
#[component]
pub fn ProjectAdminPage() -> impl IntoView {
    let slug = use_params_map().with_untracked(|p| p.get("slug").unwrap_or_default());
    let session = LocalResource::new(|| api::get("/admin/api/session".into()));
    view! {
        <Title text=format!("{slug} · Admin · Tracker")/>
        <p><a href="/admin">"← All projects"</a></p>
        <h1>{slug.clone()}</h1>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let slug = slug.clone();
                Suspend::new(async move {
                    match session.await {
                        Ok(s) if s["user"].is_string() => view! { <Project slug session=s/> }.into_any(),
                        Ok(_) => view! { <p>"Please " <a href="/admin">"log in"</a> "."</p> }.into_any(),
                        Err(e) => view! { <p class="error">{e}</p> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn Project(slug: String, session: Value) -> impl IntoView {
    let may_change = api::may_change(&session, &slug);
    let csrf = StoredValue::new(session["csrf"].as_str().unwrap_or_default().to_string());
    let version = RwSignal::new(0u32);
    let (queues_path, claims_path) = (
        format!("/admin/api/{slug}/queues"),
        format!("/admin/api/{slug}/claims"),
    );
    let queues = LocalResource::new(move || {
        version.track();
        api::get(queues_path.clone())
    });
    let claims = LocalResource::new(move || {
        version.track();
        api::get(claims_path.clone())
    });
    let pending: RwSignal<Option<Pending>> = RwSignal::new(None);
    let message = RwSignal::new(String::new());

    // Runs the dry run of `path` with `body`; on success asks to confirm with `describe(count)`.
    let preview = move |path: String, body: BodyKind, describe: fn(u64) -> String| {
        let dry_path = if path.contains('?') {
            format!("{path}&dry_run=1")
        } else {
            path.clone()
        };
        let dry_body = match &body {
            BodyKind::Json(v) => {
                let mut v = v.clone();
                v["dry_run"] = true.into();
                BodyKind::Json(v)
            }
            t => t.clone(),
        };
        spawn_local(async move {
            match api::call("POST", &dry_path, &csrf.get_value(), dry_body.body()).await {
                Ok(r) => pending.set(Some(Pending {
                    text: describe(n(&r["count"])),
                    path,
                    body,
                })),
                Err(e) => message.set(e),
            }
        });
    };
    let confirm = move |_| {
        let Some(p) = pending.get_untracked() else {
            return;
        };
        spawn_local(async move {
            match api::call("POST", &p.path, &csrf.get_value(), p.body.body()).await {
                Ok(r) => message.set(format!("Done: {} items.", thousands(n(&r["count"])))),
                Err(e) => message.set(e),
            }
            pending.set(None);
            version.update(|v| *v += 1);
        });
    };

    let items = RwSignal::new(String::new());
    let add_path = format!("/admin/api/{slug}/items?queue=todo");
    let preview_add = move |_| {
        preview(
            add_path.clone(),
            BodyKind::Text(items.get_untracked()),
            |c| {
                format!(
                    "Add {} items to todo? Items the project already knows are skipped.",
                    thousands(c)
                )
            },
        )
    };
    let release_path = StoredValue::new(format!("/admin/api/{slug}/release"));

    let (from, to, regex) = (
        RwSignal::new("todo".to_string()),
        RwSignal::new("todo:redo".to_string()),
        RwSignal::new(String::new()),
    );
    let move_path = format!("/admin/api/{slug}/move");
    let preview_move = move |_| {
        let body = json!({"from": from.get_untracked(), "to": to.get_untracked(), "regex": regex.get_untracked()});
        preview(move_path.clone(), BodyKind::Json(body), |c| {
            format!("Move {} items?", thousands(c))
        })
    };
    let clear_path = format!("/admin/api/{slug}/clear");
    let preview_clear = move |_| {
        let body = json!({"queue": from.get_untracked()});
        preview(clear_path.clone(), BodyKind::Json(body), |c| {
            format!("Drop all {} items of the queue?", thousands(c))
        })
    };
    let minutes = RwSignal::new("60".to_string());
    let preview_stale = move |_| {
        let Ok(m) = minutes.get_untracked().trim().parse::<u64>() else {
            return message.set("Minutes must be a number.".into());
        };
        let body = json!({"older_than_s": m * 60});
        preview(release_path.get_value(), BodyKind::Json(body), |c| {
            format!("Release {} claims?", thousands(c))
        })
    };
    let queue_select = move |value: RwSignal<String>, label: &'static str| {
        view! {
            <label>{label}
                <select prop:value=move || value.get() on:change=move |ev| value.set(event_target_value(&ev))>
                    {QUEUES.iter().map(|q| view! { <option value=*q>{*q}</option> }).collect_view()}
                </select>
            </label>
        }
    };

    view! {
        <section class="card" aria-label="Queues">
            <h2>"Queues"</h2>
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let q = queues.await.unwrap_or_default();
                    let mut rows: Vec<(String, u64)> = q["queues"].as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), n(v))).collect()).unwrap_or_default();
                    rows.extend([("claimed".to_string(), n(&q["claimed"])), ("done".into(), n(&q["done"])), ("failed".into(), n(&q["failed"]))]);
                    view! {
                        <table><tbody>
                            {rows.into_iter().map(|(name, size)| view! {
                                <tr><th scope="row">{name}</th><td>{thousands(size)}</td></tr>
                            }).collect_view()}
                        </tbody></table>
                    }
                })}
            </Suspense>
        </section>
        <Show when=move || pending.get().is_some()>
            <section class="card confirm" role="dialog" aria-label="Confirm">
                <p>{move || pending.get().map(|p| p.text).unwrap_or_default()}</p>
                <button on:click=confirm>"Confirm"</button>
                <button on:click=move |_| pending.set(None)>"Cancel"</button>
            </section>
        </Show>
        <p role="status" aria-label="Result">{message}</p>
        <Show when=move || may_change>
            <section class="card" aria-label="Add items">
                <h2>"Add items"</h2>
                <label>"Items, one a line" <textarea rows="6" bind:value=items></textarea></label>
                <button on:click=preview_add.clone()>"Preview"</button>
            </section>
            <section class="card" aria-label="Move or clear">
                <h2>"Move or clear a queue"</h2>
                {queue_select(from, "From")}
                {queue_select(to, "To")}
                <label>"Only items matching (regular expression; empty: all)" <input bind:value=regex/></label>
                <button on:click=preview_move.clone()>"Preview move"</button>
                " "
                <button on:click=preview_clear.clone()>"Preview clearing From"</button>
            </section>
            <section class="card" aria-label="Release old claims">
                <h2>"Release old claims"</h2>
                <label>"Claimed more than this many minutes ago" <input inputmode="numeric" bind:value=minutes/></label>
                <button on:click=preview_stale>"Preview release"</button>
            </section>
        </Show>
        <super::settings::SettingsEditor slug=slug.clone() csrf may_change/>
        <section class="card" aria-label="Claims">
            <h2>"Claims"</h2>
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let groups = claims.await.ok().and_then(|c| c.as_array().cloned()).unwrap_or_default();
                    view! {
                        <table>
                            <thead><tr><th>"Downloader"</th><th>"Claims"</th><th>"Oldest"</th><th>"IPs"</th><th>"Done"</th><th></th></tr></thead>
                            <tbody>
                                {groups.into_iter().map(|g| {
                                    let d = g["downloader"].as_str().unwrap_or_default().to_string();
                                    let ips = g["ips"].as_array().map(|a| a.iter().filter_map(|i| i.as_str()).collect::<Vec<_>>().join(", ")).unwrap_or_default();
                                    let oldest = api::age(n(&g["oldest"]));
                                    let who = d.clone();
                                    let release = move |_| preview(
                                        release_path.get_value(),
                                        BodyKind::Json(json!({"downloader": who.clone()})),
                                        |c| format!("Release {} claims?", thousands(c)),
                                    );
                                    view! {
                                        <tr>
                                            <td>{d.clone()}</td>
                                            <td>{thousands(n(&g["count"]))}</td>
                                            <td>{oldest}</td>
                                            <td>{ips}</td>
                                            <td>{thousands(n(&g["done"]))}</td>
                                            <td>{may_change.then(|| view! {
                                                <button on:click=release aria-label=format!("Release claims of {d}")>"Release"</button>
                                            })}</td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }
                })}
            </Suspense>
        </section>
    }
}
