//! `/admin/users` (global admins): accounts with their roles and projects; create, change the
//! role and projects, reset the password, delete.

use super::api::{self, Body};
use leptos::{prelude::*, task::spawn_local};
use leptos_meta::Title;
use serde_json::{json, Value};

/// The accounts page.
#[component]
pub fn UsersPage() -> impl IntoView {
    let session = LocalResource::new(|| api::get("/admin/api/session".into()));
    let version = RwSignal::new(0u32);
    let users = LocalResource::new(move || {
        version.track();
        api::get("/admin/api/users".into())
    });
    let message = RwSignal::new(String::new());
    let csrf = move || async move {
        session
            .await
            .ok()
            .and_then(|s| s["csrf"].as_str().map(String::from))
            .unwrap_or_default()
    };
    // Sends `method path body`, then reloads the list and says how it went.
    let act = move |method: &'static str, path: String, body: Body, done: &'static str| {
        spawn_local(async move {
            let token = csrf().await;
            match api::call(method, &path, &token, body).await {
                Ok(_) => message.set(done.into()),
                Err(e) => message.set(e),
            }
            version.update(|v| *v += 1);
        });
    };
    let (name, password, role, projects) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new("read_only".to_string()),
        RwSignal::new(String::new()),
    );
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = json!({
            "name": name.get_untracked(), "password": password.get_untracked(),
            "role": role.get_untracked(), "projects": split(&projects.get_untracked()),
        });
        act(
            "POST",
            "/admin/api/users".into(),
            Body::Json(body),
            "Account created.",
        );
    };
    view! {
        <Title text="Accounts · Admin · Tracker"/>
        <p><a href="/admin">"← All projects"</a></p>
        <h1>"Accounts"</h1>
        <p role="status" aria-label="Result">{message}</p>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match users.await {
                    Ok(list) => {
                        let rows = list.as_array().cloned().unwrap_or_default();
                        view! {
                            <table class="card" aria-label="Accounts">
                                <thead><tr><th>"Name"</th><th>"Role"</th><th>"Projects"</th><th></th></tr></thead>
                                <tbody>
                                    {rows.into_iter().map(|u| {
                                        let user = u["name"].as_str().unwrap_or_default().to_string();
                                        let path = format!("/admin/api/users/{user}");
                                        let delete = move |_| act("DELETE", path.clone(), Body::Empty, "Account deleted.");
                                        view! {
                                            <tr>
                                                <td>{user.clone()}</td>
                                                <td>{u["role"].as_str().unwrap_or_default().replace('_', "-")}</td>
                                                <td>{join(&u["projects"])}</td>
                                                <td><button on:click=delete aria-label=format!("Delete {user}")>"Delete"</button></td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error">{e}</p> }.into_any(),
                }
            })}
        </Suspense>
        <form class="card admin-form" on:submit=create aria-label="New account">
            <h2>"New account"</h2>
            <label>"Name" <input bind:value=name required/></label>
            <label>"Password" <input type="password" autocomplete="new-password" minlength="10" bind:value=password required/></label>
            <label>"Role"
                <select prop:value=move || role.get() on:change=move |ev| role.set(event_target_value(&ev))>
                    <option value="read_only">"read-only"</option>
                    <option value="project">"project admin"</option>
                    <option value="global">"global admin"</option>
                </select>
            </label>
            <label>"Projects (comma-separated, for project admins)" <input bind:value=projects/></label>
            <button type="submit">"Create account"</button>
        </form>
    }
}

fn split(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

fn join(v: &Value) -> String {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}
