//! `/admin/tokens`: the logged-in account's API tokens for scripts. A new token's secret is
//! shown once; tokens act with the account's role; revoking one stops it at once.

use super::{
    api::{self, n, Body},
    bulk::{BodyKind, Bulk, ConfirmBox},
    frame::Frame,
};
use leptos::{prelude::*, task::spawn_local};
use serde_json::{json, Value};

/// The API tokens page.
#[component]
pub fn TokensPage() -> impl IntoView {
    view! {
        <Frame title="API tokens".into() current="/admin/tokens" content=|s| view! { <Tokens session=s/> }/>
    }
}

#[component]
fn Tokens(session: Value) -> impl IntoView {
    let bulk = Bulk::new(session["csrf"].as_str().unwrap_or_default().to_string());
    let tokens = LocalResource::new(move || {
        bulk.version.track();
        api::get("/admin/api/tokens".into())
    });
    let (name, secret) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = Body::Json(json!({"name": name.get_untracked()}));
        spawn_local(async move {
            match api::call("POST", "/admin/api/tokens", &bulk.csrf.get_value(), body).await {
                Ok(v) => {
                    secret.set(v["secret"].as_str().unwrap_or_default().to_string());
                    bulk.message.set("Token created.".into());
                    name.set(String::new());
                }
                Err(e) => bulk.message.set(e),
            }
            bulk.version.update(|v| *v += 1);
        });
    };
    let revoke = move |id: String, label: String| {
        bulk.ask(
            format!("Revoke the token {label:?}? Scripts using it stop working at once."),
            "DELETE",
            format!("/admin/api/tokens/{}", api::encode(&id)),
            BodyKind::Json(json!({})),
        )
    };
    let role = session["role"]
        .as_str()
        .unwrap_or_default()
        .replace('_', "-");
    let can = role != "read-only";
    view! {
        <p class="muted">{format!("Tokens act as you ({role}). Scripts send them as ")}
            <code>"Authorization: Bearer TOKEN"</code>", e.g. "
            <code>"curl -H \"Authorization: Bearer $TOKEN\" --data-binary @items.gz 'https://…/admin/api/SLUG/items?queue=todo'"</code></p>
        <ConfirmBox bulk/>
        <Show when=move || !secret.get().is_empty()>
            <section class="card confirm" aria-label="Token created">
                <p>"Copy the token now: it is not shown again."</p>
                <code class="secret" aria-label="Token secret">{move || secret.get()}</code>
                <button on:click=move |_| secret.set(String::new())>"Done"</button>
            </section>
        </Show>
        <section class="card" aria-label="Tokens">
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let list = match tokens.await {
                        Ok(v) => v.as_array().cloned().unwrap_or_default(),
                        Err(e) => return view! { <p class="error">{e}</p> }.into_any(),
                    };
                    if list.is_empty() {
                        return view! { <p class="muted">"No tokens."</p> }.into_any();
                    }
                    view! {
                        <table aria-label="Tokens">
                            <thead><tr><th>"Name"</th><th>"Id"</th><th>"Created"</th><th></th></tr></thead>
                            <tbody>
                                {list.into_iter().map(|t| {
                                    let id = t["id"].as_str().unwrap_or_default().to_string();
                                    let label = t["name"].as_str().unwrap_or_default().to_string();
                                    let (i2, l2) = (id.clone(), label.clone());
                                    view! {
                                        <tr>
                                            <td>{label.clone()}</td>
                                            <td class="mono">{id}</td>
                                            <td>{api::when(n(&t["t"]))}</td>
                                            <td>{can.then(|| view! { <button on:click=move |_| revoke(i2.clone(), l2.clone()) aria-label=format!("Revoke {label}")>"Revoke"</button> })}</td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any()
                })}
            </Suspense>
        </section>
        {if can {
            view! {
                <form class="card admin-form" on:submit=create aria-label="New token">
                    <h2>"New token"</h2>
                    <label>"What it is for" <input bind:value=name required maxlength="64"/></label>
                    <button type="submit">"Create token"</button>
                </form>
            }.into_any()
        } else {
            view! { <p class="muted">"Read-only accounts make no tokens."</p> }.into_any()
        }}
    }
}
