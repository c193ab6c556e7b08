//! The zstd dictionary of a project page: the one served to the grab scripts now, and uploading
//! a new one (raw, or in a zstd frame; checked by the server before it is served).

use super::{api, bulk::Bulk, loaded::Loaded};
use crate::{format::bytes, model::admin::DictionaryInfo};
use leptos::{html, prelude::*};

/// The dictionary served now (id, size, SHA-256, when set), and a file upload for a new one.
#[component]
pub fn Dictionary(slug: String, bulk: Bulk, may_change: bool) -> impl IntoView {
    let path = StoredValue::new(format!("/admin/api/{slug}/dictionary"));
    let loaded = LocalResource::new(move || {
        bulk.version.track();
        api::get::<Option<DictionaryInfo>>(path.get_value())
    });
    let file_input: NodeRef<html::Input> = NodeRef::new();
    let upload = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let Some(file) = api::chosen_file(file_input) else {
                return bulk.message.set("Choose a dictionary file first.".into());
            };
            let text = format!(
                "Serve {} ({}) as the project's dictionary? Grab scripts switch to it within 30 minutes; the previous ones stay downloadable for uploads in flight.",
                file.name(),
                bytes(file.size() as u64)
            );
            bulk.ask(
                text,
                "PUT",
                path.get_value(),
                super::bulk::BodyKind::File(file),
            );
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = file_input;
    };
    let dictionary_url = format!("/dictionary?project={slug}");
    view! {
        <section class="card" aria-label="Dictionary">
            <h2>"Compression dictionary"</h2>
            <Loaded reply=loaded show={move |d: Option<DictionaryInfo>| match d {
                None => view! { <p class="muted">"None: grab scripts that ask for one get 404."</p> }.into_any(),
                Some(d) => view! {
                    <table aria-label="Dictionary served"><tbody>
                        <tr><th scope="row">"Id"</th><td>{d.id}</td></tr>
                        <tr><th scope="row">"Size"</th><td>{bytes(d.bytes)}</td></tr>
                        <tr><th scope="row">"SHA-256"</th><td class="mono">{d.sha256}</td></tr>
                        <tr><th scope="row">"Set"</th><td>{api::when(d.t)}</td></tr>
                    </tbody></table>
                }.into_any(),
            }}/>
            <p class="muted">"Served at " <code>{dictionary_url}</code> " to the grab scripts that compress their WARCs with one (urls, reddit, telegram, imgur)."</p>
            {may_change.then(|| view! {
                <p class="row">
                    <label>"New dictionary (raw, or .zst with its size; at most 16 MiB)"
                        <input type="file" node_ref=file_input aria-label="Dictionary file"/>
                    </label>
                    <button on:click=upload>"Upload dictionary"</button>
                </p>
            })}
        </section>
    }
}
