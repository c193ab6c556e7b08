//! The framework's floor (see Cargo.toml): one route, a counter, and a resource under Suspense.

use leptos::prelude::*;
use leptos_router::{
    components::{Route, Router, Routes},
    path,
};

#[component]
fn Home() -> impl IntoView {
    let n = RwSignal::new(0);
    let r = Resource::new(
        || (),
        |_| async { Ok::<Vec<String>, ServerFnError>(vec!["a".to_string()]) },
    );
    view! {
        <button on:click=move |_| n.update(|x| *x += 1)>{move || n.get()}</button>
        <Suspense fallback=|| "…">
            {move || Suspend::new(async move { r.await.map(|v| v.len()).unwrap_or(0) })}
        </Suspense>
    }
}

#[component]
fn Floor() -> impl IntoView {
    view! {
        <Router>
            <Routes fallback=|| "not found">
                <Route path=path!("/") view=Home/>
            </Routes>
        </Router>
    }
}

/// Entry point, as the tracker's.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    leptos::mount::hydrate_body(Floor);
}
