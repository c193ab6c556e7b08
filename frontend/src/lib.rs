//! The Wasm bundles' entry point: hydrates the server-rendered page. Built twice: without the
//! `admin` feature it is the public pages' bundle (`tracker`), with it the admin panel's
//! (`admin`); `scripts/build-site.sh` builds both. Each holds only its own app.

/// Called by the hydration script once the Wasm has loaded.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    #[cfg(not(feature = "admin"))]
    leptos::mount::hydrate_body(app::App);
    #[cfg(feature = "admin")]
    leptos::mount::hydrate_body(app::AdminApp);
}
