//! What the sections of a project's panel page share: their addresses and the queue picker.

use crate::model::admin::QUEUES;
use leptos::prelude::*;

/// The URL of section `segment` of project `slug`.
pub fn section_url(slug: &str, segment: &str) -> String {
    if segment.is_empty() {
        format!("/admin/p/{slug}")
    } else {
        format!("/admin/p/{slug}/{segment}")
    }
}

/// A `<select>` of the queues bound to `value`.
pub fn queue_select(value: RwSignal<String>, label: &'static str) -> impl IntoView {
    view! {
        <label>{label}
            <select prop:value=move || value.get() on:change=move |ev| value.set(event_target_value(&ev))>
                {QUEUES.iter().map(|q| view! { <option value=*q>{*q}</option> }).collect_view()}
            </select>
        </label>
    }
}
