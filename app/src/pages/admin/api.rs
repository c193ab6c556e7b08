//! The panel's calls to the admin JSON API (`/admin/api/...`), made from the browser with the
//! session cookie and the CSRF token, their answers read as the types of
//! [`crate::model::admin`]. On the server they do nothing: the panel's data is loaded after
//! hydration.

pub use crate::format::encode;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Serialize;
use serde_json::Value;

/// A request body of [`crate::model::admin`] (the struct the server decodes) as JSON.
pub fn json<T: Serialize>(request: &T) -> Value {
    serde_json::to_value(request).unwrap_or_default()
}

/// What a call sends.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
pub enum Body {
    /// Nothing (GET, DELETE).
    Empty,
    /// A JSON document.
    Json(Value),
    /// Plain text (items, one a line).
    Text(String),
    /// A file the browser streams from disk (items, one a line; plain, gzip or zstd).
    File(FileBody),
}

/// A file picked in the page (in the browser; nothing on the server).
#[cfg(feature = "hydrate")]
pub type FileBody = send_wrapper::SendWrapper<web_sys::File>;
/// A file picked in the page (in the browser; nothing on the server).
#[cfg(not(feature = "hydrate"))]
#[derive(Clone)]
pub struct FileBody;

/// `method` `path` with `body`; the answer read as a `T` (an empty answer reads as `null`), or
/// the server's reason.
#[cfg(feature = "hydrate")]
pub async fn call<T: DeserializeOwned>(
    method: &str,
    path: &str,
    csrf: &str,
    body: Body,
) -> Result<T, String> {
    use gloo_net::http::{Method, RequestBuilder};
    let method = match method {
        "POST" => Method::POST,
        "PUT" => Method::PUT,
        "DELETE" => Method::DELETE,
        _ => Method::GET,
    };
    let builder = RequestBuilder::new(path)
        .method(method)
        .header(crate::model::admin::CSRF_HEADER, csrf);
    let request = match body {
        Body::Empty => builder.build(),
        Body::Json(v) => builder.json(&v),
        Body::Text(t) => builder.header("content-type", "text/plain").body(t),
        // A Blob body is read from disk as it is sent, never held in memory whole.
        Body::File(f) => builder
            .header("content-type", "application/octet-stream")
            .body(wasm_bindgen::JsValue::from((*f).clone())),
    }
    .map_err(|e| e.to_string())?;
    let resp = request.send().await.map_err(|e| e.to_string())?;
    let text = resp.text().await.map_err(|e| e.to_string())?;
    if !resp.ok() {
        return Err(text.trim().to_string());
    }
    let text = if text.is_empty() { "null" } else { &text };
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// On the server the panel loads nothing.
#[cfg(not(feature = "hydrate"))]
pub async fn call<T: DeserializeOwned>(
    _method: &str,
    _path: &str,
    _csrf: &str,
    _body: Body,
) -> Result<T, String> {
    Err("The admin panel needs JavaScript.".into())
}

/// `method` `path` with `body` for its effect only: whatever the answer holds is not read.
pub async fn send(method: &str, path: &str, csrf: &str, body: Body) -> Result<(), String> {
    call::<IgnoredAny>(method, path, csrf, body)
        .await
        .map(|_| ())
}

/// `GET path`, read as a `T`.
pub async fn get<T: DeserializeOwned>(path: String) -> Result<T, String> {
    call("GET", &path, "", Body::Empty).await
}

/// The first file chosen in the file input `input`, if any.
#[cfg(feature = "hydrate")]
pub fn chosen_file(
    input: leptos::prelude::NodeRef<leptos::html::Input>,
) -> Option<send_wrapper::SendWrapper<web_sys::File>> {
    use leptos::prelude::GetUntracked;
    let file = input.get_untracked()?.files()?.get(0)?;
    Some(send_wrapper::SendWrapper::new(file))
}

/// Reloads the page (after logging in or out).
pub fn reload() {
    #[cfg(feature = "hydrate")]
    if let Some(w) = web_sys::window() {
        let _ = w.location().reload();
    }
}

/// Opens `href`.
pub fn go(href: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(w) = web_sys::window() {
        let _ = w.location().set_href(href);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = href;
}

/// Milliseconds since the epoch of a `datetime-local` value (local time), if it is one.
pub fn local_time_ms(value: &str) -> Option<u64> {
    #[cfg(feature = "hydrate")]
    {
        let ms = js_sys::Date::parse(value);
        (ms.is_finite() && ms >= 0.0).then_some(ms as u64)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = value;
        None
    }
}

/// `t_ms` as a local date and time, e.g. `2026-11-21 23:59`.
pub fn when(t_ms: u64) -> String {
    #[cfg(feature = "hydrate")]
    {
        let d = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(t_ms as f64));
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            d.get_full_year(),
            d.get_month() + 1,
            d.get_date(),
            d.get_hours(),
            d.get_minutes()
        )
    }
    #[cfg(not(feature = "hydrate"))]
    {
        t_ms.to_string()
    }
}

/// How long ago `t_ms` (ms since the epoch) was, e.g. `5 min`.
pub fn age(t_ms: u64) -> String {
    #[cfg(feature = "hydrate")]
    let now = js_sys::Date::now() as u64;
    #[cfg(not(feature = "hydrate"))]
    let now = t_ms;
    let s = now.saturating_sub(t_ms) / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86400 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86400),
    }
}
