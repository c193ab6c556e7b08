//! The OpenAPI document of the tracker's HTTP API (`GET /openapi.json`) and Swagger UI reading
//! it (`/admin/api/docs`). The document is made from the routes themselves: each handler
//! carries its description (`#[utoipa::path]`: method, path, parameters, bodies, answers, its
//! doc comment), and `crate::routes` registers it with that description, so a route cannot be
//! served without being described, nor described without being served.

use axum::Router;
use utoipa::{openapi::OpenApi as Document, OpenApi};
use utoipa_swagger_ui::SwaggerUi;

/// Where the document is served.
pub const DOCUMENT_PATH: &str = "/openapi.json";
/// Where Swagger UI is served.
pub const UI_PATH: &str = "/admin/api/docs";

/// What the document says before its paths: the API's name, the groups of its calls.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tracker",
        description = "The tracker's HTTP API. The warrior API is the wire format seesaw-kit's \
            Warrior and the grab scripts speak (JSON bodies, sent with or without a \
            content type); the admin API serves the panel and scripts, with a session cookie \
            and its CSRF token (`X-CSRF-Token`) or an API token (`Authorization: Bearer`). \
            Every error is a 4xx or 5xx with a plain-text or JSON reason."
    ),
    tags(
        (name = "warrior", description = "Claims, dones, releases, uploads and backfeed: the calls \
            of seesaw-kit and the grab scripts. A pipeline's token may sit in the tracker URL \
            (`/SLUG/token=SECRET/...`)."),
        (name = "warrior-hq", description = "Warrior HQ: the Warrior's registration and \
            updates, the projects list and the fleet's numbers."),
        (name = "public", description = "The legacy public JSON of the universal tracker."),
        (name = "leaderboard", description = "The data of the live leaderboard's pages."),
        (name = "live", description = "The live feeds: a WebSocket and a server-sent event stream."),
        (name = "metrics", description = "Prometheus metrics."),
        (name = "admin", description = "The admin panel's API (`/admin/api`).")
    )
)]
struct Base;

/// The whole document: [`Base`] and the routers' parts.
pub fn document(parts: impl IntoIterator<Item = Document>) -> Document {
    let mut doc = Base::openapi();
    for part in parts {
        doc.merge(part);
    }
    doc
}

/// `GET /openapi.json`, and Swagger UI at `/admin/api/docs`.
pub fn router<S: Clone + Send + Sync + 'static>(doc: Document) -> Router<S> {
    SwaggerUi::new(UI_PATH).url(DOCUMENT_PATH, doc).into()
}
