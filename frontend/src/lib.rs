//! The Wasm bundle's entry point: hydrates the server-rendered page.

/// Called by the hydration script once the Wasm has loaded. Hydrates asynchronously, so that a
/// lazily loaded route (the admin panel) can fetch its chunk first.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_lazy(app::App);
}
