//! The item section of a project page: one item looked up by name, with where it is, its
//! decay score and its timeline (each line "time event who version"; a `decayed` line shows the
//! score the reclaim left it with).

use super::{api, loaded::Loaded};
use crate::model::admin::{ItemInfo, TimelineEntry};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// A score as the panel shows it: four significant digits at most.
fn score(s: f64) -> String {
    let text = format!("{s:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "0" {
        format!("{s:.2e}")
    } else {
        text.to_string()
    }
}

fn entry_row(e: TimelineEntry) -> impl IntoView {
    let or_dash = |s: String| if s.is_empty() { "-".to_string() } else { s };
    view! {
        <tr>
            <td>{api::when(e.t)}</td>
            <td>{e.e}</td>
            <td>{or_dash(e.d)}</td>
            <td>{or_dash(e.v)}</td>
            <td>{e.score.map(score).unwrap_or_default()}</td>
        </tr>
    }
}

fn item_view(info: ItemInfo) -> AnyView {
    let Some(state) = info.state else {
        return view! { <p class="muted">{format!("The project does not know {:?}.", info.item)}</p> }
            .into_any();
    };
    let holder = info
        .downloader
        .map(|d| format!(" by {d}"))
        .unwrap_or_default();
    let decay = match info.score {
        Some(s) => format!("{} after {} reclaims", score(s), info.reclaims),
        None => "1 (never reclaimed with decay on)".into(),
    };
    view! {
        <dl class="stats" aria-label="Item state">
            <dt>"State"</dt><dd>{format!("{state}{holder}")}</dd>
            <dt>"Detail"</dt><dd><code>{info.detail}</code></dd>
            <dt>"Score"</dt><dd>{decay}</dd>
        </dl>
        <table aria-label="Timeline">
            <thead><tr><th>"Time"</th><th>"Event"</th><th>"Who"</th><th>"Version"</th><th>"Score"</th></tr></thead>
            <tbody>{info.timeline.into_iter().map(entry_row).collect_view()}</tbody>
        </table>
    }
    .into_any()
}

/// Looks up one item of project `slug`.
#[component]
pub fn ItemLookup(slug: String) -> impl IntoView {
    // `?item=NAME` (a search result's link) looks it up at once, and again when it changes.
    let query = use_query_map();
    let (name, asked) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    Effect::new(move || {
        let item = query.with(|q| q.get("item").unwrap_or_default());
        if !item.is_empty() {
            name.set(item.clone());
            asked.set(item);
        }
    });
    let base = StoredValue::new(format!("/admin/api/{slug}/item?name="));
    let reply = LocalResource::new(move || {
        let item = asked.get();
        async move {
            if item.is_empty() {
                return Ok(None);
            }
            let path = format!("{}{}", base.get_value(), api::encode(&item));
            api::get::<ItemInfo>(path).await.map(Some)
        }
    });
    let look_up = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        asked.set(name.get_untracked().trim().to_string());
    };
    view! {
        <section class="card" aria-label="Item">
            <h2>"Item"</h2>
            <form class="row" on:submit=look_up>
                <label>"Item name" <input bind:value=name/></label>
                <button type="submit">"Look up"</button>
            </form>
            <Loaded reply show={|info: Option<ItemInfo>| info.map(item_view)}/>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::score;

    #[test]
    fn scores_show_four_digits_at_most() {
        assert_eq!(score(0.8), "0.8");
        assert_eq!(score(0.32768), "0.3277");
        assert_eq!(score(0.00001), "1.00e-5");
    }
}
