//! `/admin/pipelines`: pipeline tokens (global admins). A pipeline's secret is shown once, with
//! the tracker URL a grab script uses it in; revoking one refuses its claims from then on.

use super::{
    api::{self, Body},
    bulk::{BodyKind, Bulk, ConfirmBox},
    frame::Frame,
    loaded::Loaded,
};
use crate::model::admin::{AdminSession, CreatedPipeline, Pipeline, PipelineRequest};
use leptos::{prelude::*, task::spawn_local};
use serde_json::json;

/// The pipelines page.
#[component]
pub fn PipelinesPage() -> impl IntoView {
    view! {
        <Frame title="Pipelines".into() current="/admin/pipelines" content=|s| view! { <Pipelines session=s/> }/>
    }
}

#[component]
fn Pipelines(session: AdminSession) -> impl IntoView {
    let bulk = Bulk::new(session.csrf.clone());
    let list = LocalResource::new(move || {
        bulk.version.track();
        api::get::<Vec<Pipeline>>("/admin/api/pipelines".into())
    });
    let (name, tags, match_only) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(false),
    );
    let secret = RwSignal::new(String::new());
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let tag_list: Vec<String> = tags
            .get_untracked()
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        let body = Body::Json(api::json(&PipelineRequest {
            name: name.get_untracked().trim().to_string(),
            tags: tag_list,
            match_only: match_only.get_untracked(),
        }));
        spawn_local(async move {
            let csrf = bulk.csrf.get_value();
            match api::call::<CreatedPipeline>("POST", "/admin/api/pipelines", &csrf, body).await {
                Ok(p) => {
                    secret.set(p.secret);
                    bulk.message
                        .set(format!("Pipeline {} created.", p.pipeline.name));
                    name.set(String::new());
                    tags.set(String::new());
                    match_only.set(false);
                }
                Err(e) => bulk.message.set(e),
            }
            bulk.version.update(|v| *v += 1);
        });
    };
    let revoke = move |pipeline: String| {
        bulk.ask(
            format!("Revoke the pipeline {pipeline:?}? Its claims and reports are refused within seconds."),
            "DELETE",
            format!("/admin/api/pipelines/{}", api::encode(&pipeline)),
            BodyKind::Json(json!({})),
        )
    };
    let global = session.is_global();
    view! {
        <p class="muted">"A pipeline claims with its own token: a grab script puts it in its tracker URL, "
            <code>"https://…/SLUG/token=SECRET/"</code>" (or "<code>"…/SLUG/token=SECRET/multi=N/"</code>
            "), other clients send "<code>"Authorization: Bearer SECRET"</code>". A project's settings "
            "can require a token, and its tags choose which pipelines it serves. A pipeline's claims "
            "are reported and released by that pipeline only."</p>
        <ConfirmBox bulk/>
        <Show when=move || !secret.get().is_empty()>
            <section class="card confirm" aria-label="Pipeline created">
                <p>"Copy the secret now: it is not shown again."</p>
                <code class="secret" aria-label="Pipeline secret">{move || secret.get()}</code>
                <button on:click=move |_| secret.set(String::new())>"Done"</button>
            </section>
        </Show>
        <section class="card" aria-label="Pipelines">
            <Loaded reply=list show={move |list: Vec<Pipeline>| {
                if list.is_empty() {
                    return view! { <p class="muted">"No pipelines."</p> }.into_any();
                }
                view! {
                    <table aria-label="Pipelines">
                        <thead><tr><th>"Name"</th><th>"Tags"</th><th>"Match-only"</th><th>"Created"</th><th></th></tr></thead>
                        <tbody>
                            {list.into_iter().map(|p| {
                                let label = p.name.clone();
                                let target = p.name.clone();
                                view! {
                                    <tr>
                                        <td class="mono">{p.name}</td>
                                        <td>{p.tags.join(", ")}</td>
                                        <td>{if p.match_only { "yes" } else { "no" }}</td>
                                        <td>{api::when(p.t)}</td>
                                        <td>{global.then(|| view! { <button on:click=move |_| revoke(target.clone()) aria-label=format!("Revoke {label}")>"Revoke"</button> })}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}/>
        </section>
        {global.then(|| view! {
            <form class="card admin-form" on:submit=create aria-label="New pipeline">
                <h2>"New pipeline"</h2>
                <label>"Name (A-Z, a-z, 0-9, _ . -)" <input bind:value=name required maxlength="64" pattern="[A-Za-z0-9_.\\-]{1,64}"/></label>
                <label>"Tags (comma-separated, a-z 0-9 _ -)" <input bind:value=tags/></label>
                <label class="check"><input type="checkbox" bind:checked=match_only/> "Match-only: served only by projects naming one of its tags"</label>
                <button type="submit">"Create pipeline"</button>
            </form>
        })}
    }
}
