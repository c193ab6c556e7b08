//! `/admin/users` (global admins): accounts with their roles and projects; create, change the
//! role and projects, reset the password, delete (the server refuses the last global admin and
//! says so); any account's API tokens, to revoke one that leaked.

use super::{
    api::{self, Body},
    bulk::{BodyKind, Bulk, ConfirmBox},
    frame::Frame,
    loaded::Loaded,
};
use crate::model::admin::{AccountInfo, AdminSession, ApiToken, Role, UserChange};
use leptos::prelude::*;
use serde_json::json;

/// The accounts page.
#[component]
pub fn UsersPage() -> impl IntoView {
    view! {
        <Frame title="Accounts".into() current="/admin/users" content=|s| view! { <Users session=s/> }/>
    }
}

/// The role `<select>` bound to `role`.
fn role_select(role: RwSignal<String>, label: String) -> impl IntoView {
    view! {
        <select prop:value=move || role.get() on:change=move |ev| role.set(event_target_value(&ev)) aria-label=label>
            <option value="read_only">"read-only"</option>
            <option value="project">"project admin"</option>
            <option value="global">"global admin"</option>
        </select>
    }
}

#[component]
fn Users(session: AdminSession) -> impl IntoView {
    let bulk = Bulk::new(session.csrf);
    let users = LocalResource::new(move || {
        bulk.version.track();
        api::get::<Vec<AccountInfo>>("/admin/api/users".into())
    });
    let (name, password, role, projects) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new("read_only".to_string()),
        RwSignal::new(String::new()),
    );
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = api::json(&UserChange {
            name: name.get_untracked(),
            password: Some(password.get_untracked()),
            role: Role::parse(&role.get_untracked()),
            projects: Some(split(&projects.get_untracked())),
        });
        bulk.run(
            "POST",
            "/admin/api/users".into(),
            Body::Json(body),
            "Account created.",
        );
    };
    view! {
        <ConfirmBox bulk/>
        <Loaded reply=users show={move |list: Vec<AccountInfo>| {
            let names: Vec<String> = list.iter().map(|u| u.name.clone()).collect();
            view! {
                <table class="card" aria-label="Accounts">
                    <thead><tr><th>"Name"</th><th>"Role"</th><th>"Projects"</th><th>"New password"</th><th></th></tr></thead>
                    <tbody>
                        {list.into_iter().map(|u| view! { <UserRow user=u bulk/> }).collect_view()}
                    </tbody>
                </table>
                <AccountTokens names bulk/>
            }
        }}/>
        <form class="card admin-form" on:submit=create aria-label="New account">
            <h2>"New account"</h2>
            <label>"Name" <input bind:value=name required/></label>
            <label>"Password" <input type="password" autocomplete="new-password" minlength="10" bind:value=password required/></label>
            <label>"Role" {role_select(role, "Role".into())}</label>
            <label>"Projects (comma-separated, for project admins)" <input bind:value=projects/></label>
            <button type="submit">"Create account"</button>
        </form>
    }
}

/// One account: its role and projects editable, a password reset, delete.
#[component]
fn UserRow(user: AccountInfo, bulk: Bulk) -> impl IntoView {
    let name = user.name;
    let path = StoredValue::new(format!("/admin/api/users/{}", api::encode(&name)));
    let role = RwSignal::new(user.role.as_str().to_string());
    let projects = RwSignal::new(user.projects.join(", "));
    let password = RwSignal::new(String::new());
    let save = move |_| {
        let body = api::json(&UserChange {
            role: Role::parse(&role.get_untracked()),
            projects: Some(split(&projects.get_untracked())),
            ..UserChange::default()
        });
        bulk.run("PUT", path.get_value(), Body::Json(body), "Account saved.");
    };
    let reset = move |_| {
        let body = api::json(&UserChange {
            password: Some(password.get_untracked()),
            ..UserChange::default()
        });
        password.set(String::new());
        bulk.run("PUT", path.get_value(), Body::Json(body), "Password reset.");
    };
    let who = name.clone();
    let delete = move |_| {
        bulk.ask(
            format!("Delete the account {who}? Its API tokens are revoked."),
            "DELETE",
            path.get_value(),
            BodyKind::Json(json!({})),
        )
    };
    view! {
        <tr>
            <td>{name.clone()}</td>
            <td>{role_select(role, format!("Role of {name}"))}</td>
            <td><input bind:value=projects aria-label=format!("Projects of {name}")/></td>
            <td><input type="password" autocomplete="new-password" bind:value=password aria-label=format!("New password of {name}")/>
                " " <button on:click=reset aria-label=format!("Reset password of {name}")>"Reset"</button></td>
            <td>
                <button on:click=save aria-label=format!("Save {name}")>"Save"</button> " "
                <button class="danger" on:click=delete aria-label=format!("Delete {name}")>"Delete"</button>
            </td>
        </tr>
    }
}

/// The API tokens of the account chosen, each with a button to revoke it.
#[component]
fn AccountTokens(names: Vec<String>, bulk: Bulk) -> impl IntoView {
    let chosen = RwSignal::new(names.first().cloned().unwrap_or_default());
    let tokens = LocalResource::new(move || {
        bulk.version.track();
        let name = chosen.get();
        api::get::<Vec<ApiToken>>(format!("/admin/api/users/{}/tokens", api::encode(&name)))
    });
    let revoke = move |id: String, label: String| {
        let name = chosen.get_untracked();
        bulk.ask(
            format!("Revoke {name}'s token {label:?}? Scripts using it stop working at once."),
            "DELETE",
            format!(
                "/admin/api/users/{}/tokens/{}",
                api::encode(&name),
                api::encode(&id)
            ),
            BodyKind::Json(json!({})),
        )
    };
    view! {
        <section class="card" aria-label="Tokens of an account">
            <h2>"API tokens of an account"</h2>
            <label>"Account "
                <select prop:value=move || chosen.get() on:change=move |ev| chosen.set(event_target_value(&ev))>
                    {names.into_iter().map(|n| view! { <option value=n.clone()>{n.clone()}</option> }).collect_view()}
                </select>
            </label>
            <Loaded reply=tokens show={move |list: Vec<ApiToken>| super::tokens::token_table(list, "Their tokens", Some(revoke))}/>
        </section>
    }
}

fn split(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}
