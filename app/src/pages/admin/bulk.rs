//! Bulk actions of a project page: every one is first run as a dry run, its count shown in a
//! confirmation box, and only run for real once confirmed.

use super::api::{self, Body, FileBody};
use crate::{format::thousands, model::admin::Affected};
use leptos::{prelude::*, task::spawn_local};
use serde_json::Value;

/// What a bulk call sends.
#[derive(Clone)]
pub enum BodyKind {
    /// A JSON document (`dry_run: true` is added for the preview).
    Json(Value),
    /// Items as text.
    Text(String),
    /// Items in a picked file (sent twice: counted, then added).
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    File(FileBody),
}

impl BodyKind {
    fn body(&self) -> Body {
        match self {
            BodyKind::Json(v) => Body::Json(v.clone()),
            BodyKind::Text(t) => Body::Text(t.clone()),
            BodyKind::File(f) => Body::File(f.clone()),
        }
    }
}

/// An action waiting for confirmation: what it will do, and the call that does it.
#[derive(Clone)]
pub struct Pending {
    text: String,
    method: &'static str,
    path: String,
    body: BodyKind,
    /// Whether the call answers how many items it affected (a previewed bulk action).
    counted: bool,
}

/// The state the bulk actions of one page share; cheap to copy into handlers.
#[derive(Clone, Copy)]
pub struct Bulk {
    /// The action awaiting confirmation.
    pub pending: RwSignal<Option<Pending>>,
    /// The last outcome or error.
    pub message: RwSignal<String>,
    /// Bumped after every change, so lists reload.
    pub version: RwSignal<u32>,
    /// The session's CSRF token.
    pub csrf: StoredValue<String>,
}

impl Bulk {
    /// Fresh state for a page whose session carries `csrf`.
    pub fn new(csrf: String) -> Self {
        Bulk {
            pending: RwSignal::new(None),
            message: RwSignal::new(String::new()),
            version: RwSignal::new(0),
            csrf: StoredValue::new(csrf),
        }
    }

    /// Runs the dry run of `POST path` with `body`; on success asks to confirm with
    /// `describe(count)`.
    pub fn preview(
        &self,
        path: String,
        body: BodyKind,
        describe: impl Fn(u64) -> String + 'static,
    ) {
        let this = *self;
        let dry_path = match &body {
            BodyKind::Json(_) => path.clone(),
            _ if path.contains('?') => format!("{path}&dry_run=1"),
            _ => format!("{path}?dry_run=1"),
        };
        let dry_body = match &body {
            BodyKind::Json(v) => {
                let mut v = v.clone();
                if let Some(fields) = v.as_object_mut() {
                    fields.insert("dry_run".into(), true.into());
                }
                BodyKind::Json(v)
            }
            other => other.clone(),
        };
        this.message.set(String::new());
        spawn_local(async move {
            let sent: Result<Affected, _> =
                api::call("POST", &dry_path, &this.csrf.get_value(), dry_body.body()).await;
            match sent {
                Ok(r) => this.pending.set(Some(Pending {
                    text: describe(r.count),
                    method: "POST",
                    path,
                    body,
                    counted: true,
                })),
                Err(e) => this.message.set(e),
            }
        });
    }

    /// Asks to confirm `text` before `method path body` runs (no count to preview).
    pub fn ask(&self, text: String, method: &'static str, path: String, body: BodyKind) {
        self.message.set(String::new());
        self.pending.set(Some(Pending {
            text,
            method,
            path,
            body,
            counted: false,
        }));
    }

    /// Runs the pending action.
    pub fn confirm(&self) {
        let this = *self;
        let Some(p) = this.pending.get_untracked() else {
            return;
        };
        spawn_local(async move {
            let (csrf, body) = (this.csrf.get_value(), p.body.body());
            let done = if p.counted {
                api::call::<Affected>(p.method, &p.path, &csrf, body)
                    .await
                    .map(|r| format!("Done: {} items.", thousands(r.count)))
            } else {
                api::send(p.method, &p.path, &csrf, body)
                    .await
                    .map(|()| "Done.".to_string())
            };
            this.message.set(done.unwrap_or_else(|e| e));
            this.pending.set(None);
            this.version.update(|v| *v += 1);
        });
    }

    /// Runs `method path body` now, then says `done` (or the error) and reloads the lists.
    pub fn run(&self, method: &'static str, path: String, body: Body, done: &'static str) {
        let this = *self;
        spawn_local(async move {
            match api::send(method, &path, &this.csrf.get_value(), body).await {
                Ok(()) => this.message.set(done.into()),
                Err(e) => this.message.set(e),
            }
            this.version.update(|v| *v += 1);
        });
    }
}

/// The confirmation box and the result line of a page's bulk actions.
#[component]
pub fn ConfirmBox(bulk: Bulk) -> impl IntoView {
    view! {
        <Show when=move || bulk.pending.get().is_some()>
            <section class="card confirm" role="dialog" aria-label="Confirm">
                <p>{move || bulk.pending.get().map(|p| p.text).unwrap_or_default()}</p>
                <div class="actions">
                    <button class="danger" on:click=move |_| bulk.confirm()>"Confirm"</button>
                    <button on:click=move |_| bulk.pending.set(None)>"Cancel"</button>
                </div>
            </section>
        </Show>
        <p role="status" aria-label="Result" class="result">{move || bulk.message.get()}</p>
    }
}
