//! The one way a panel page waits for a reply of the admin API: "Loading…", then the reply
//! shown, or the server's reason in an error paragraph.

use leptos::prelude::*;

/// Waits for `reply`, then shows `show(value)`, or the error.
#[component]
pub fn Loaded<T, F, V>(
    /// The reply of the admin API, loaded in the browser.
    reply: LocalResource<Result<T, String>>,
    /// What to show of a reply that came.
    show: F,
) -> impl IntoView
where
    T: Clone + 'static,
    F: Fn(T) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let show = show.clone();
                Suspend::new(async move {
                    match reply.await {
                        Ok(value) => show(value).into_any(),
                        Err(e) => view! { <p class="error">{e}</p> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}
