//! The claims and failed-items sections of a project page: claims grouped by downloader,
//! released by downloader, single item, regex, claimed-before time or age; failed items listed
//! with their reason, requeued or dropped. All previewed (dry run) first.

use super::{
    api,
    bulk::{BodyKind, Bulk},
    loaded::Loaded,
};
use crate::{
    format::thousands,
    model::admin::{ClaimGroup, FailedList, Release, ResolveFailed},
};
use leptos::prelude::*;

/// Claims grouped by downloader, and the release form.
#[component]
pub fn Claims(slug: String, bulk: Bulk, may_change: bool) -> impl IntoView {
    let claims_path = format!("/admin/api/{slug}/claims");
    let claims = LocalResource::new(move || {
        bulk.version.track();
        api::get::<Vec<ClaimGroup>>(claims_path.clone())
    });
    let release_path = StoredValue::new(format!("/admin/api/{slug}/release"));
    let release = move |body: Release| {
        bulk.preview(
            release_path.get_value(),
            BodyKind::Json(api::json(&body)),
            |c| format!("Release {} claims?", thousands(c)),
        )
    };
    let (item, regex, before, minutes) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let preview_filter = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (i, r, b, m) = (
            item.get_untracked(),
            regex.get_untracked(),
            before.get_untracked(),
            minutes.get_untracked(),
        );
        let before_ms = match b.as_str() {
            "" => None,
            b => match api::local_time_ms(b) {
                Some(ms) => Some(ms),
                None => {
                    return bulk
                        .message
                        .set("Claimed before: not a date and time.".into())
                }
            },
        };
        let older_than_s = match m.trim() {
            "" => None,
            m => match m.parse::<u64>() {
                Ok(m) => Some(m * 60),
                Err(_) => return bulk.message.set("Minutes must be a number.".into()),
            },
        };
        release(Release {
            item: Some(i.trim().to_string()).filter(|i| !i.is_empty()),
            regex: Some(r).filter(|r| !r.is_empty()),
            before_ms,
            older_than_s,
            ..Release::default()
        })
    };
    view! {
        <section class="card" aria-label="Claims">
            <h2>"Claims"</h2>
            <Loaded reply=claims show={move |groups: Vec<ClaimGroup>| {
                if groups.is_empty() {
                    return view! { <p class="muted">"No claims."</p> }.into_any();
                }
                view! {
                    <table>
                        <thead><tr><th>"Downloader"</th><th>"Claims"</th><th>"Oldest"</th><th>"IPs"</th><th>"Done"</th><th></th></tr></thead>
                        <tbody>
                            {groups.into_iter().map(|g| {
                                let d = g.downloader;
                                let who = d.clone();
                                view! {
                                    <tr>
                                        <td>{d.clone()}</td>
                                        <td>{thousands(g.count)}</td>
                                        <td>{api::age(g.oldest)}</td>
                                        <td>{g.ips.join(", ")}</td>
                                        <td>{thousands(g.done)}</td>
                                        <td>{may_change.then(|| view! {
                                            <button on:click=move |_| release(Release { downloader: Some(who.clone()), ..Release::default() })
                                                aria-label=format!("Release claims of {d}")>"Release"</button>
                                        })}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}/>
            {may_change.then(|| view! {
                <form class="release" on:submit=preview_filter aria-label="Release claims">
                    <h3>"Release claims matching all of"</h3>
                    <div class="grid2">
                        <label>"Item" <input bind:value=item/></label>
                        <label>"Items matching (regular expression)" <input bind:value=regex/></label>
                        <label>"Claimed before" <input type="datetime-local" bind:value=before/></label>
                        <label>"Claimed more than this many minutes ago" <input inputmode="numeric" bind:value=minutes/></label>
                    </div>
                    <button type="submit">"Preview release"</button>
                </form>
            })}
        </section>
    }
}

/// Failed items with their reason: requeue or drop, all or one.
#[component]
pub fn Failed(slug: String, bulk: Bulk, may_change: bool) -> impl IntoView {
    let path = StoredValue::new(format!("/admin/api/{slug}/failed"));
    let failed = LocalResource::new(move || {
        bulk.version.track();
        api::get::<FailedList>(path.get_value())
    });
    let act = move |action: &'static str, items: Option<Vec<String>>| {
        let body = api::json(&ResolveFailed {
            action: action.into(),
            items,
            dry_run: false,
        });
        let verb = if action == "requeue" {
            "Requeue"
        } else {
            "Drop"
        };
        bulk.preview(path.get_value(), BodyKind::Json(body), move |c| {
            format!("{verb} {} failed items?", thousands(c))
        })
    };
    view! {
        <section class="card" aria-label="Failed items">
            <h2>"Failed items"</h2>
            <Loaded reply=failed show={move |list: FailedList| {
                let (items, total) = (list.items, list.total);
                if total == 0 {
                    return view! { <p class="muted">"No failed items."</p> }.into_any();
                }
                view! {
                    <p>{format!("{} failed items", thousands(total))}
                        {(total as usize > items.len()).then(|| format!(" (the first {} shown)", items.len()))}</p>
                    {may_change.then(|| view! {
                        <div class="actions">
                            <button on:click=move |_| act("requeue", None)>"Requeue all failed"</button>
                            <button on:click=move |_| act("drop", None)>"Drop all failed"</button>
                        </div>
                    })}
                    <table>
                        <thead><tr><th>"Item"</th><th>"Reason"</th><th>"When"</th><th></th></tr></thead>
                        <tbody>
                            {items.into_iter().map(|f| {
                                let item = f.item;
                                let (a, b) = (item.clone(), item.clone());
                                view! {
                                    <tr>
                                        <td class="mono">{item.clone()}</td>
                                        <td>{f.reason}</td>
                                        <td>{api::age(f.t) + " ago"}</td>
                                        <td>{may_change.then(|| view! {
                                            <button on:click=move |_| act("requeue", Some(vec![a.clone()])) aria-label=format!("Requeue {item}")>"Requeue"</button>
                                            " "
                                            <button on:click=move |_| act("drop", Some(vec![b.clone()])) aria-label=format!("Drop {item}")>"Drop"</button>
                                        })}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}/>
        </section>
    }
}
