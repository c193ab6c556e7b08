//! `/admin/tokens`: the logged-in account's own page. Its password, changed by giving the one it
//! has now (every account, read-only ones included), and its API tokens for scripts: made with
//! the password entered again, each expiring; a new token's secret is shown once; tokens act
//! with the account's role; revoking one, or changing the password, stops it at once.

use super::{
    api::{self, Body},
    bulk::{BodyKind, Bulk, ConfirmBox},
    frame::Frame,
    loaded::Loaded,
};
use crate::model::admin::{
    AdminSession, ApiToken, CreatedToken, NewToken, PasswordChange, Role, TOKEN_DAYS_DEFAULT,
    TOKEN_DAYS_MAX,
};
use leptos::{prelude::*, task::spawn_local};
use serde_json::json;

/// The API tokens page.
#[component]
pub fn TokensPage() -> impl IntoView {
    view! {
        <Frame title="Your account".into() current="/admin/tokens" content=|s| view! { <Tokens session=s/> }/>
    }
}

#[component]
fn Tokens(session: AdminSession) -> impl IntoView {
    let bulk = Bulk::new(session.csrf.clone());
    let tokens = LocalResource::new(move || {
        bulk.version.track();
        api::get::<Vec<ApiToken>>("/admin/api/tokens".into())
    });
    let (name, secret) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    let (password, days) = (
        RwSignal::new(String::new()),
        RwSignal::new(TOKEN_DAYS_DEFAULT.to_string()),
    );
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = Body::Json(api::json(&NewToken {
            name: name.get_untracked(),
            password: password.get_untracked(),
            days: days.get_untracked().trim().parse().ok(),
        }));
        password.set(String::new());
        spawn_local(async move {
            let csrf = bulk.csrf.get_value();
            match api::call::<CreatedToken>("POST", "/admin/api/tokens", &csrf, body).await {
                Ok(t) => {
                    secret.set(t.secret);
                    bulk.message.set("Token created.".into());
                    name.set(String::new());
                }
                Err(e) => bulk.message.set(e),
            }
            bulk.version.update(|v| *v += 1);
        });
    };
    let (current, new) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    let change = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = Body::Json(api::json(&PasswordChange {
            current: current.get_untracked(),
            new: new.get_untracked(),
        }));
        spawn_local(async move {
            let csrf = bulk.csrf.get_value();
            match api::call::<AdminSession>("POST", "/admin/api/password", &csrf, body).await {
                Ok(s) => {
                    // The session goes on with a new CSRF token.
                    bulk.csrf.set_value(s.csrf);
                    current.set(String::new());
                    new.set(String::new());
                    bulk.message.set(
                        "Password changed: your other sessions ended and your API tokens were revoked."
                            .into(),
                    );
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
    let role = session.role_label();
    let can = session.role != Some(Role::ReadOnly);
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
            <Loaded reply=tokens show={move |list: Vec<ApiToken>| token_table(list, "Tokens", can.then_some(revoke))}/>
        </section>
        {if can {
            view! {
                <form class="card admin-form" on:submit=create aria-label="New token">
                    <h2>"New token"</h2>
                    <label>"What it is for" <input bind:value=name required maxlength="64"/></label>
                    <label>"Lasts (days)" <input type="number" min="1" max=TOKEN_DAYS_MAX.to_string() bind:value=days required/></label>
                    <label>"Your password" <input type="password" autocomplete="current-password" bind:value=password required/></label>
                    <button type="submit">"Create token"</button>
                </form>
            }.into_any()
        } else {
            view! { <p class="muted">"Read-only accounts make no tokens."</p> }.into_any()
        }}
        <form class="card admin-form" on:submit=change aria-label="Change your password">
            <h2>"Your password"</h2>
            <p class="muted">"At least 10 characters and hard to guess (a few uncommon words do). Changing it ends your other sessions and revokes your API tokens."</p>
            <label>"Current password" <input type="password" autocomplete="current-password" bind:value=current required/></label>
            <label>"New password" <input type="password" autocomplete="new-password" minlength="10" bind:value=new required/></label>
            <button type="submit">"Change password"</button>
        </form>
    }
}

/// `list` as a table labelled `label`, each row with a button to revoke it when `revoke` is
/// given (called with the token's id and name); "No tokens." for none.
pub(super) fn token_table<R>(list: Vec<ApiToken>, label: &'static str, revoke: Option<R>) -> AnyView
where
    R: Fn(String, String) + Copy + Send + Sync + 'static,
{
    if list.is_empty() {
        return view! { <p class="muted">"No tokens."</p> }.into_any();
    }
    view! {
        <table aria-label=label>
            <thead><tr><th>"Name"</th><th>"Id"</th><th>"Created"</th><th>"Expires"</th><th></th></tr></thead>
            <tbody>
                {list.into_iter().map(|t| {
                    let name = t.name;
                    let (id, n2) = (t.id.clone(), name.clone());
                    view! {
                        <tr>
                            <td>{name.clone()}</td>
                            <td class="mono">{t.id}</td>
                            <td>{api::when(t.t)}</td>
                            <td>{api::when(t.expires)}</td>
                            <td>{revoke.map(|r| view! { <button class="danger" on:click=move |_| r(id.clone(), n2.clone()) aria-label=format!("Revoke {name}")>"Revoke"</button> })}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
