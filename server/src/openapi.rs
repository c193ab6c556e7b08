//! The OpenAPI document of the tracker's HTTP API (`GET /openapi.json`) and Swagger UI reading
//! it (`/admin/api/docs`). The document is made from the routes themselves: each handler
//! carries its description (`#[utoipa::path]`: method, path, parameters, bodies, answers, its
//! doc comment), and `crate::routes` registers it with that description, so a route cannot be
//! served without being described, nor described without being served.

use axum::{
    http::{header, HeaderValue},
    Router,
};
use tower_http::set_header::SetResponseHeaderLayer;
use utoipa::{
    openapi::{
        security::{
            ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
        },
        OpenApi as Document,
    },
    OpenApi,
};
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

/// The admin API's calls a visitor makes before there is a session.
const OPEN_ADMIN_CALLS: [&str; 3] = ["/admin/api/session", "/admin/api/login", "/admin/api/setup"];

/// The whole document: [`Base`] and the routers' parts, with how each call is authorised: the
/// admin API by the session cookie with its CSRF token, or an API token; `/metrics` by a token.
pub fn document(parts: impl IntoIterator<Item = Document>) -> Document {
    let mut doc = Base::openapi();
    for part in parts {
        doc.merge(part);
    }
    // A route's catch-all (`{*item}`, the rest of the path) is an ordinary path parameter to
    // OpenAPI, named without the star, as its `params` declare it.
    let paths = std::mem::take(&mut doc.paths.paths);
    doc.paths.paths = paths
        .into_iter()
        .map(|(path, item)| (path.replace("{*", "{"), item))
        .collect();
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "session",
        SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
            app::model::admin::SESSION_COOKIE,
            "The panel's session, made by `POST /admin/api/login`",
        ))),
    );
    components.add_security_scheme(
        "csrf",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            app::model::admin::CSRF_HEADER,
            "The session's CSRF token (`GET /admin/api/session`), on every change",
        ))),
    );
    components.add_security_scheme(
        "token",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "An API token (`/admin/tokens`) for the admin API; the admin or metrics token for `/metrics`",
                ))
                .build(),
        ),
    );
    let by_session =
        SecurityRequirement::new("session", Vec::<String>::new()).add("csrf", Vec::<String>::new());
    let by_token = SecurityRequirement::new("token", Vec::<String>::new());
    for (path, item) in doc.paths.paths.iter_mut() {
        let admin = path.starts_with("/admin/api/") && !OPEN_ADMIN_CALLS.contains(&path.as_str());
        if !admin && path != "/metrics" {
            continue;
        }
        let ops = [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.delete,
            &mut item.patch,
        ];
        for op in ops.into_iter().flatten() {
            op.security = Some(if admin {
                vec![by_session.clone(), by_token.clone()]
            } else {
                vec![by_token.clone()]
            });
        }
    }
    doc
}

/// The Content-Security-Policy of Swagger UI's files: the tracker's own ([`app::csp::POLICY`]),
/// but with inline styles, which Swagger UI sets on its elements. Scripts stay its own files.
fn ui_policy() -> HeaderValue {
    let policy =
        app::csp::POLICY.replacen("style-src 'self'", "style-src 'self' 'unsafe-inline'", 1);
    HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static(app::csp::POLICY))
}

/// `GET /openapi.json`, and Swagger UI at `/admin/api/docs`.
pub fn router<S: Clone + Send + Sync + 'static>(doc: Document) -> Router<S> {
    Router::from(SwaggerUi::new(UI_PATH).url(DOCUMENT_PATH, doc)).layer(
        SetResponseHeaderLayer::overriding(header::CONTENT_SECURITY_POLICY, ui_policy()),
    )
}

/// The project a call is about, as its path names it (`/{slug}/...`): the path parameter of
/// every per-project call's description.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ProjectPath {
    /// The project's slug.
    pub slug: String,
}
