//! The backfeed key and upload targets of a project page, and destroying the project (global
//! admins, after typing its slug).

use super::{
    api::{self, Body},
    bulk::{BodyKind, Bulk},
    loaded::Loaded,
};
use crate::model::admin::{BackfeedKeyChange, ProjectSettings, TargetChange};
use leptos::{prelude::*, task::spawn_local};

/// A change of one backfeed key (`rotate`, `revoke` by its id) or a new one (`add`).
fn key_change(action: &str, id: Option<String>) -> BackfeedKeyChange {
    BackfeedKeyChange {
        action: Some(action.into()),
        id,
    }
}

/// The backfeed keys (each with what it fed, rotated or revoked alone after confirmation) and
/// the upload targets.
#[component]
pub fn Targets(slug: String, bulk: Bulk, may_change: bool) -> impl IntoView {
    let settings_path = format!("/admin/api/{slug}/settings");
    let loaded = LocalResource::new(move || {
        bulk.version.track();
        api::get::<ProjectSettings>(settings_path.clone())
    });
    let key_path = StoredValue::new(format!("/admin/api/{slug}/backfeed-key"));
    let targets_path = StoredValue::new(format!("/admin/api/{slug}/targets"));
    let slug = StoredValue::new(slug);
    // Every key at once (`{}`), or one key alone by its id (`rotate`, `revoke`), or a new one.
    let keys_change = move |text: String, change: BackfeedKeyChange| {
        bulk.ask(
            text,
            "POST",
            key_path.get_value(),
            BodyKind::Json(api::json(&change)),
        );
    };
    let rotate_all = move |had_key: bool| {
        let text = if had_key {
            "Replace every backfeed key with one new key? The old keys stop working at once: grab scripts need the new URL."
        } else {
            "Generate a backfeed key? Backfeed opens at the new URL."
        };
        keys_change(text.into(), BackfeedKeyChange::default());
    };
    let change = move |target: String, action: &'static str| {
        let body = Body::Json(api::json(&TargetChange {
            target,
            action: action.into(),
        }));
        let done = match action {
            "activate" => "Target active.",
            "deactivate" => "Target inactive.",
            _ => "Target removed.",
        };
        bulk.run("POST", targets_path.get_value(), body, done);
    };
    let new_target = RwSignal::new(String::new());
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        change(new_target.get_untracked().trim().to_string(), "activate");
        new_target.set(String::new());
    };
    view! {
        <section class="card" aria-label="Backfeed and upload targets">
            <h2>"Backfeed keys"</h2>
            <Loaded reply=loaded show={move |v: ProjectSettings| {
                let had = !v.backfeed_keys.is_empty();
                let hidden = v.secrets_hidden;
                // One URL per key: a project fed by several grab scripts has one each, and the
                // table says which fed how much.
                let rows = v.backfeed_keys.into_iter().map(|k| {
                    let url = if hidden {
                        "hidden from read-only accounts".to_string()
                    } else {
                        format!("/backfeed/legacy/{}-{}", slug.get_value(), k.key)
                    };
                    let (rid, vid) = (k.id.clone(), k.id.clone());
                    let id = k.id.clone();
                    view! {
                        <tr>
                            <td class="mono">{k.id.clone()}</td>
                            <td><code aria-label=format!("Backfeed URL {id}")>{url}</code></td>
                            <td class="num">{crate::format::thousands(k.records)}</td>
                            <td class="num">{crate::format::thousands(k.added)}</td>
                            <td>{if k.last == 0 { "never".to_string() } else { format!("{} ago", api::age(k.last)) }}</td>
                            <td>{may_change.then(|| view! {
                                <button aria-label=format!("Rotate key {rid}") on:click=move |_| keys_change(
                                    format!("Rotate key {rid}? Its URL stops working at once; the other keys keep working."),
                                    key_change("rotate", Some(rid.clone())),
                                )>"Rotate"</button>
                                " "
                                <button aria-label=format!("Revoke key {vid}") on:click=move |_| keys_change(
                                    format!("Revoke key {vid}? Its URL stops working at once; the other keys keep working."),
                                    key_change("revoke", Some(vid.clone())),
                                )>"Revoke"</button>
                            })}</td>
                        </tr>
                    }
                }).collect_view();
                let targets = v.targets;
                view! {
                    {(!had).then(|| view! { <p class="muted">"No backfeed key: backfeed is closed."</p> })}
                    {had.then(|| view! {
                        <table aria-label="Backfeed keys">
                            <thead><tr><th>"Key"</th><th>"URL"</th><th>"Records fed"</th><th>"New"</th><th>"Last fed"</th><th></th></tr></thead>
                            <tbody>{rows}</tbody>
                        </table>
                    })}
                    {may_change.then(|| view! {
                        <p class="row">
                            <button on:click=move |_| rotate_all(had)>{if had { "Replace all keys" } else { "Generate backfeed key" }}</button>
                            {had.then(|| view! {
                                " "
                                <button on:click=move |_| keys_change(
                                    "Add a backfeed key? The existing keys keep working.".into(),
                                    key_change("add", None),
                                )>"Add a key"</button>
                            })}
                        </p>
                    })}
                    <h2>"Upload targets"</h2>
                    {targets.is_empty().then(|| view! { <p class="muted">"No upload targets."</p> })}
                    <table aria-label="Upload targets"><tbody>
                        {targets.into_iter().map(|(t, active)| {
                            let (a, b) = (t.clone(), t.clone());
                            view! {
                                <tr>
                                    <td class="mono">{t.clone()}</td>
                                    <td>{if active { "active" } else { "inactive" }}</td>
                                    <td>{may_change.then(|| view! {
                                        {if active {
                                            view! { <button on:click=move |_| change(a.clone(), "deactivate") aria-label=format!("Deactivate {t}")>"Deactivate"</button> }.into_any()
                                        } else {
                                            view! { <button on:click=move |_| change(a.clone(), "activate") aria-label=format!("Activate {t}")>"Activate"</button> }.into_any()
                                        }}
                                        " "
                                        <button on:click=move |_| change(b.clone(), "remove") aria-label=format!("Remove {t}")>"Remove"</button>
                                    })}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody></table>
                }
            }}/>
            {may_change.then(|| view! {
                <form class="row" on:submit=add aria-label="Add upload target">
                    <label>"New target (e.g. rsync://host/module/:downloader/)" <input bind:value=new_target required/></label>
                    <button type="submit">"Add target"</button>
                </form>
            })}
        </section>
    }
}

/// Destroys the project once its slug is typed (global admins).
#[component]
pub fn Destroy(slug: String, bulk: Bulk) -> impl IntoView {
    let typed = RwSignal::new(String::new());
    let error = RwSignal::new(String::new());
    let expected = slug.clone();
    let matches = move || typed.get() == expected;
    let destroy = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let confirm = typed.get_untracked();
        let path = format!("/admin/api/{slug}?confirm={}", api::encode(&confirm));
        spawn_local(async move {
            match api::send("DELETE", &path, &bulk.csrf.get_value(), Body::Empty).await {
                Ok(_) => api::go("/admin"),
                Err(e) => error.set(e),
            }
        });
    };
    view! {
        <form class="card danger-zone" on:submit=destroy aria-label="Destroy project">
            <h2>"Destroy project"</h2>
            <p>"Removes the project, every item, its statistics and its log. This cannot be undone."</p>
            <label>"Type the project's slug to confirm" <input bind:value=typed autocomplete="off"/></label>
            <button type="submit" class="danger" disabled=move || !matches()>"Destroy project"</button>
            <p class="error" role="alert">{error}</p>
        </form>
    }
}
