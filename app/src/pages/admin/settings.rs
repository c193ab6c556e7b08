//! The settings section of a project's panel page: the settings as JSON (checked by the server
//! as `tracker project set` checks them) and the description (HTML, sanitised when saved).

use super::api::{self, Body};
use leptos::{prelude::*, task::spawn_local};
use serde_json::Value;

/// Edits project `slug`'s settings; without `may_change`, shows them only.
#[component]
pub fn SettingsEditor(slug: String, csrf: StoredValue<String>, may_change: bool) -> impl IntoView {
    let path = StoredValue::new(format!("/admin/api/{slug}/settings"));
    let loaded = LocalResource::new(move || api::get(path.get_value()));
    let (settings, description, message) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    Effect::new(move || {
        if let Some(Ok(v)) = loaded.get() {
            settings.set(serde_json::to_string_pretty(&v["settings"]).unwrap_or_default());
            description.set(v["description"].as_str().unwrap_or_default().to_string());
        }
    });
    let save = move |_| {
        let parsed: Result<Value, _> = serde_json::from_str(&settings.get_untracked());
        let Ok(parsed) = parsed else {
            return message.set("The settings are not valid JSON.".into());
        };
        let body =
            serde_json::json!({"settings": parsed, "description": description.get_untracked()});
        spawn_local(async move {
            match api::call(
                "PUT",
                &path.get_value(),
                &csrf.get_value(),
                Body::Json(body),
            )
            .await
            {
                Ok(v) => {
                    description.set(v["description"].as_str().unwrap_or_default().to_string());
                    message.set("Saved.".into());
                }
                Err(e) => message.set(e),
            }
        });
    };
    view! {
        <section class="card" aria-label="Settings">
            <h2>"Settings"</h2>
            <label>"Settings (JSON)" <textarea rows="16" bind:value=settings readonly=!may_change></textarea></label>
            <label>"Description (HTML)" <textarea rows="4" bind:value=description readonly=!may_change></textarea></label>
            {may_change.then(|| view! { <button on:click=save>"Save settings"</button> })}
            <p role="status" aria-label="Settings status">{message}</p>
        </section>
    }
}
