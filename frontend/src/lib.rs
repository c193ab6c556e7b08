//! The Wasm bundle's entry point: hydrates the server-rendered page.

/// Called by the hydration script once the Wasm has loaded.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}
