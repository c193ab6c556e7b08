//! The route table, grouped by who calls it.

use crate::{
    api::{backfeed, downloaders, extras, feed, hq, live, pages, pipeline, public, warrior},
    gate::GateLayer,
    state::AppState,
};
use app::{admin_shell, shell, AdminApp};
use axum::http::{header, HeaderName, HeaderValue};
use axum::{
    extract::{DefaultBodyLimit, Extension, Path, Request, State},
    response::{IntoResponse, Redirect, Response},
    routing::get,
    Router,
};
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower::ServiceExt;
use tower_http::{compression::CompressionLayer, services::ServeDir, timeout::TimeoutLayer};
use utoipa_axum::{
    router::{OpenApiRouter, UtoipaMethodRouterExt},
    routes,
};

/// How long a public page waits for its data before it answers 503.
const PAGE_DATA_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The whole app: what `main` serves and what tests start.
pub fn router(state: AppState) -> Router {
    // Bodies are capped near what the largest legal call needs (`crate::limits`).
    let limits = &state.config.limits;
    let small = DefaultBodyLimit::max(limits.claim_body);
    // The warrior API, Warrior HQ's, the public JSON and the live feeds, each route registered
    // with its OpenAPI description (`crate::openapi`), so the document lists exactly what is
    // routed.
    let warriors = OpenApiRouter::new()
        .routes(routes!(warrior::claim_items).layer(small))
        // seesaw posts to `<tracker url>/request` where the url is `.../SLUG/multi=N/`: 0.10.3
        // as it is (`multi=N//request`), today's with the trailing slash stripped.
        .routes(routes!(warrior::claim_multi).layer(small))
        .routes(routes!(warrior::claim_multi_today).layer(small))
        // One item, or the list today's seesaw gives back (at most a claim's worth of names).
        .routes(routes!(warrior::release_item).layer(DefaultBodyLimit::max(limits.done_body())))
        // seesaw's UploadWithTracker sends the whole batch as `item_name` (NUL-joined, 100
        // URLs with their contexts in urls-grab): as large as a done's.
        .routes(routes!(extras::get_upload_target).layer(DefaultBodyLimit::max(limits.done_body())))
        .routes(routes!(extras::report_uploaded).layer(DefaultBodyLimit::max(limits.done_body())))
        .routes(routes!(warrior::report_done).layer(DefaultBodyLimit::max(limits.done_body())))
        .routes(
            routes!(warrior::report_done_and_claim)
                .layer(DefaultBodyLimit::max(limits.done_body())),
        )
        .routes(
            routes!(warrior::report_done_and_claim_multi)
                .layer(DefaultBodyLimit::max(limits.done_body())),
        )
        .routes(
            routes!(warrior::report_done_and_claim_multi_today)
                .layer(DefaultBodyLimit::max(limits.done_body())),
        )
        .routes(routes!(warrior::get_item))
        .routes(
            routes!(extras::show_rescue_form, extras::rescue_items)
                .layer(DefaultBodyLimit::max(limits.rescue_body())),
        )
        .routes(routes!(backfeed::add_backfeed).layer((
            DefaultBodyLimit::max(limits.backfeed_body),
            Extension(backfeed::DecodeSlots::new(limits.backfeed_decodes)),
        )))
        .routes(routes!(extras::get_now))
        .routes(routes!(extras::get_dictionary))
        // Up to 16 MiB an answer: limited per address like the public reads (the bytes come
        // from a process-wide cache, `store::dictionary`).
        .routes(
            routes!(extras::download_dictionary).layer(axum::middleware::from_fn_with_state(
                state.clone(),
                crate::web::limit_reads,
            )),
        );

    // Warrior HQ: a warrior's calls are small, and limited per address like the public reads.
    let hq = OpenApiRouter::new()
        .routes(routes!(hq::register_warrior))
        .routes(routes!(hq::update_warrior))
        .routes(routes!(extras::get_network_check))
        .layer(small);
    let public_json = OpenApiRouter::new()
        .routes(routes!(public::check_health))
        .routes(routes!(hq::get_fleet_stats))
        // warrior-hq's own paths, for the tools built on them.
        .routes(routes!(hq::get_hq_stats))
        .routes(routes!(hq::get_hq_positions))
        .routes(routes!(crate::admin::project_list::get_projects_json))
        .routes(routes!(public::get_stats))
        .routes(routes!(public::get_charts))
        .routes(routes!(public::get_update_status))
        .routes(routes!(public::get_tracker_stats))
        .routes(routes!(feed::get_recent))
        .routes(routes!(downloaders::get_downloaders))
        .routes(routes!(pages::get_projects))
        .routes(routes!(pages::get_page))
        .routes(routes!(pages::get_charts))
        .routes(routes!(pages::get_window))
        .routes(routes!(pages::get_figures));

    let live_feeds = OpenApiRouter::new()
        .routes(routes!(live::watch_project))
        .routes(routes!(feed::stream_live_events));
    let metrics = OpenApiRouter::new().routes(routes!(crate::admin::metrics::get_metrics));
    let (warriors, warriors_doc) = warriors.split_for_parts();
    let (hq, hq_doc) = hq.split_for_parts();
    let (public_json, public_doc) = public_json.split_for_parts();
    let public_json = public_json.route("/{slug}", get(redirect_or_file));
    let (live_feeds, live_doc) = live_feeds.split_for_parts();
    let (metrics, metrics_doc) = metrics.split_for_parts();
    let (admin, admin_doc) = admin_api(&state).split_for_parts();
    let doc = crate::openapi::document([
        warriors_doc,
        hq_doc,
        public_doc,
        live_doc,
        metrics_doc,
        admin_doc,
    ]);

    let pkg_dir = format!("{}/{}", state.leptos.site_root, state.leptos.site_pkg_dir);
    // The public pages and the admin panel are two apps, each hydrated by its own Wasm bundle.
    // The public app has no router and no server functions (see `app::App`, `app::data`): both
    // its paths render it whole from the data read first, which also tells it which page it is.
    // What no route matches: a panel address with a slash too many is redirected, anything else
    // is a file of the site root or the not-found page.
    let unrouted = {
        let files = leptos_axum::file_and_error_handler::<AppState, _>(shell);
        move |uri: axum::http::Uri, state: State<AppState>, req: Request| {
            let files = files.clone();
            async move {
                if let Some(to) = admin_page_without_slash(&uri) {
                    return Redirect::permanent(&to).into_response();
                }
                if let Some(why) = no_such_call(req.method(), &uri) {
                    return crate::web::ApiError::not_found(why).into_response();
                }
                files(uri, state, req).await
            }
        }
    };
    // One address may read the public pages and JSON only so often (`crate::throttle`).
    let limit_reads = axum::middleware::from_fn_with_state(state.clone(), crate::web::limit_reads);
    // While Redis does not answer, a page says so (the public JSON answers for itself: 503).
    let page_layers = (
        limit_reads.clone(),
        axum::middleware::from_fn_with_state(state.clone(), crate::web::explain_pages_while_down),
    );
    let pages = Router::new()
        .route("/", get(render_public_page).layer(page_layers.clone()))
        .route("/{slug}/", get(render_public_page).layer(page_layers))
        // `/admin/` is not a project's leaderboard (which `/{slug}/` would take it for).
        .route("/admin/", get(unrouted.clone()))
        .leptos_routes(&state, generate_route_list(AdminApp), {
            let options = state.leptos.clone();
            move || admin_shell(options.clone())
        })
        // The bundles' compressed copies (`crate::precompress`), else the file itself.
        .nest_service(
            "/pkg",
            tower::ServiceBuilder::new()
                .layer(axum::middleware::map_response(vary_on_encoding))
                .service(
                    ServeDir::new(pkg_dir)
                        .precompressed_br()
                        .precompressed_gzip(),
                ),
        )
        .fallback(unrouted);

    let admin = admin
        .layer(axum::middleware::from_fn_with_state(
            state.read_cache.clone(),
            crate::read_cache::forget_after_change,
        ))
        .layer(axum::middleware::map_response(no_store));

    // Each route group's gate (`crate::gate`): its requests counted and timed for `/metrics`,
    // the warrior calls and the live feeds refused at once while Redis does not answer. Every
    // request but the live feeds' and the panel's (whose uploads stream files of any size) is
    // answered within the request timeout: 408 for a client that sends its body too slowly.
    // The gate and the timeout go on in one `layer` call: one boxed level, not one each.
    let gate = |group: &'static str| GateLayer::new(state.http_metrics.clone(), group);
    let timeout = TimeoutLayer::with_status_code(
        axum::http::StatusCode::REQUEST_TIMEOUT,
        state.config.limits.request_timeout(),
    );
    let redis = || state.redis.clone();
    let app = Router::new()
        .merge(warriors.layer((gate("warrior").refusing_while_down(redis()), timeout)))
        .merge(live_feeds.layer(gate("live").refusing_while_down(redis())))
        .merge(admin.layer(gate("admin")))
        .merge(metrics.layer((gate("metrics"), timeout)))
        // The API's description, and Swagger UI reading it (`crate::openapi`).
        .merge(crate::openapi::router(doc).layer((gate("public"), timeout)))
        // gzip for whoever accepts it: pages, bundles (unless a precompressed copy went out)
        // and the public JSON. The warrior API's answers are a few bytes and stay as the old
        // tracker sent them; the live feeds are streams.
        .merge(hq.layer(limit_reads.clone()).layer((gate("hq"), timeout)))
        .merge(
            public_json
                .layer(axum::middleware::from_fn_with_state(
                    state.read_cache.clone(),
                    crate::read_cache::serve_cached,
                ))
                .layer(limit_reads.clone())
                .merge(pages)
                .layer(CompressionLayer::new())
                .layer((gate("public"), timeout)),
        )
        .with_state(state);
    // A pipeline's token inside the tracker URL (`/SLUG/token=SECRET/...`) leaves the path
    // before routing, so every warrior route takes it (`api::pipeline`). The security headers
    // go on every response here, once, rather than as a layer wrapping every route.
    Router::new().fallback_service(
        tower::ServiceBuilder::new()
            .map_request(pipeline::take_token_segment)
            .map_response(with_security_headers)
            .service(app),
    )
}

/// `/admin/api/...`: the admin JSON API, with its session and CSRF layers.
fn admin_api(state: &AppState) -> OpenApiRouter<AppState> {
    use crate::admin::{
        archive, auth, claims, csrf, dictionary, fleet, items, listing, login, logs, people,
        pipelines, project_list, projects, session_layer, settings, tokens,
    };
    // A visitor who has not logged in has no session, so no CSRF token: these need only a
    // same-origin `Origin` (a cross-site page cannot send JSON here without CORS either).
    let visitors = OpenApiRouter::new()
        .routes(routes!(auth::show_session))
        .routes(routes!(login::log_in))
        .routes(routes!(login::set_up))
        .layer(axum::middleware::from_fn(csrf::same_origin_guard));
    let api = OpenApiRouter::new()
        .routes(routes!(login::log_out))
        .routes(routes!(login::change_password))
        .routes(routes!(projects::show_overview))
        .routes(routes!(projects::create_project))
        .routes(routes!(people::list_blocks, people::add_block))
        .routes(routes!(people::remove_block))
        .routes(routes!(people::list_users, people::create_user))
        .routes(routes!(people::update_user, people::delete_user))
        .routes(routes!(people::list_audit))
        .routes(routes!(tokens::list_tokens, tokens::create_token))
        .routes(routes!(tokens::revoke_token))
        .routes(routes!(tokens::list_account_tokens))
        .routes(routes!(tokens::revoke_account_token))
        .routes(routes!(
            pipelines::list_pipelines,
            pipelines::create_pipeline
        ))
        .routes(routes!(pipelines::revoke_pipeline))
        .routes(routes!(project_list::show_list, project_list::save_list))
        .routes(routes!(project_list::restore_list))
        .routes(routes!(listing::show_auto, listing::pin_auto))
        .routes(routes!(fleet::show_fleet))
        .routes(routes!(logs::download_log))
        .routes(routes!(archive::archive_log))
        .routes(routes!(archive::list_archives))
        .routes(routes!(archive::show_offload))
        .routes(routes!(archive::download_archive))
        .routes(routes!(projects::destroy_project))
        .routes(routes!(settings::show_settings, settings::save_settings))
        .routes(routes!(listing::show_listing, listing::save_listing))
        .routes(routes!(projects::rotate_backfeed_key))
        .routes(
            routes!(dictionary::show_dictionary, dictionary::set_dictionary)
                .layer(DefaultBodyLimit::max(crate::store::dictionary::MAX_BYTES)),
        )
        .routes(routes!(projects::change_target))
        .routes(routes!(items::show_queues))
        .routes(routes!(items::show_item))
        .routes(routes!(items::search_items))
        .routes(routes!(items::act_on_search))
        .routes(routes!(items::add_items).layer(DefaultBodyLimit::disable()))
        .routes(routes!(items::move_items))
        .routes(routes!(items::clear_queue))
        .routes(routes!(claims::list_claims))
        .routes(routes!(claims::release_claims))
        .routes(routes!(claims::list_failed, claims::resolve_failed))
        .layer(axum::middleware::from_fn(csrf::guard))
        .merge(visitors);
    OpenApiRouter::new()
        .nest("/admin/api", api)
        .layer(session_layer(&state.store, state.config.secure_cookies))
}

/// The headers every answer carries (pages, JSON, files, the warrior API alike): the
/// Content-Security-Policy ([`app::csp`]; a rendered page sends its own, with its scripts'
/// nonce, which is left alone), no MIME sniffing, no framing, and no address in
/// `Referer` to other sites.
const SECURITY_HEADERS: [(HeaderName, &str); 4] = [
    (header::CONTENT_SECURITY_POLICY, app::csp::POLICY),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::REFERRER_POLICY, "same-origin"),
];

/// `response` with each of [`SECURITY_HEADERS`] its handler did not set.
fn with_security_headers(mut response: Response) -> Response {
    if response
        .extensions()
        .get::<extras::ExactHeaders>()
        .is_some()
    {
        return response;
    }
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        if !headers.contains_key(&name) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
    response
}

/// `GET /` and `GET /SLUG/`: a page of the public app, rendered from the data read for it first
/// (`app::data::load_page`), which the page also carries for the browser to hydrate from. A
/// page whose data could not be read in [`PAGE_DATA_WAIT`] (Redis down) says why, with a 503.
async fn render_public_page(State(state): State<AppState>, req: Request) -> Response {
    let Ok(Ok(_slot)) =
        tokio::time::timeout(PAGE_DATA_WAIT, state.page_renders.clone().acquire_owned()).await
    else {
        return crate::web::ApiError::Unavailable(
            1,
            "The tracker is rendering as many pages as it can; retry in a moment.".into(),
        )
        .into_response();
    };
    let read = state.read_cache.page(&state.store, req.uri().path());
    let data = tokio::time::timeout(PAGE_DATA_WAIT, read)
        .await
        .map(|data| (*data).clone())
        .unwrap_or_else(|_| app::data::PageData {
            error: Some(crate::web::RECONNECTING.to_string()),
            ..Default::default()
        });
    let unavailable = data.error.is_some();
    let options = state.leptos.clone();
    let render = leptos_axum::render_app_async_with_context(
        move || provide_context(data.clone()),
        move || shell(options.clone()),
    );
    let mut resp = render(req).await;
    if unavailable {
        *resp.status_mut() = axum::http::StatusCode::SERVICE_UNAVAILABLE;
        resp.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(crate::web::UNAVAILABLE_RETRY_AFTER),
        );
    }
    resp
}

/// Why no route answers `method uri`, for a call a client makes rather than a page a browser
/// opens: any method but GET and HEAD, or any path under a project (`/SLUG/...`; the panel's
/// pages and `/pkg` aside). A warrior gets this plain 404 with its reason, never the HTML page
/// (seesaw logs the answer and retries). `None`: the site's files or the not-found page.
fn no_such_call(method: &axum::http::Method, uri: &axum::http::Uri) -> Option<String> {
    let path = uri.path();
    let under_project = path
        .strip_prefix('/')
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(first, _)| !matches!(first, "admin" | "pkg"));
    let page_read = matches!(*method, axum::http::Method::GET | axum::http::Method::HEAD);
    if page_read && !under_project {
        return None;
    }
    let shown: String = path.chars().take(200).collect();
    Some(format!(
        "No such call: {method} {shown}. The warrior calls are POST /SLUG/request, \
         /SLUG/multi=N/request, /SLUG/done, /SLUG/done+request, /SLUG/release, /SLUG/upload \
         (see /openapi.json)."
    ))
}

/// `/admin/` or `/admin/PAGE/` (a panel address with a slash too many): where it should go,
/// `/admin` or `/admin/PAGE` with the same query. The panel's JSON API (`/admin/api/...`) is
/// left alone.
fn admin_page_without_slash(uri: &axum::http::Uri) -> Option<String> {
    let page = uri.path().strip_prefix("/admin")?.strip_suffix('/')?;
    if !(page.is_empty() || page.starts_with('/'))
        || page.starts_with("/api/")
        || page.ends_with('/')
    {
        return None;
    }
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    Some(format!("/admin{page}{query}"))
}

/// Marks a bundle's answer as depending on `Accept-Encoding`: the same path is sent as brotli,
/// gzip or as built, and a shared cache (a CDN, a proxy) must not hand one client's form to
/// another. `ServeDir` does not say so for its precompressed copies.
async fn vary_on_encoding<B>(mut resp: axum::http::Response<B>) -> axum::http::Response<B> {
    let vary = axum::http::header::VARY;
    if !resp.headers().contains_key(&vary) {
        resp.headers_mut().insert(
            vary,
            axum::http::HeaderValue::from_static("accept-encoding"),
        );
    }
    resp
}

/// `GET /SEGMENT`: `/SLUG` redirects to the leaderboard `/SLUG/`; anything else (`/favicon.svg`)
/// is a file of the site root.
async fn redirect_or_file(
    State(state): State<AppState>,
    Path(segment): Path<String>,
    req: Request,
) -> Response {
    if crate::store::valid_slug(&segment) {
        return Redirect::permanent(&format!("/{segment}/")).into_response();
    }
    ServeDir::new(&*state.leptos.site_root)
        .oneshot(req)
        .await
        .into_response()
}

/// The admin API's answers carry secrets (a new token's secret, backfeed keys, the session's
/// CSRF token) and what only admins see: never kept by a browser's cache or a proxy.
async fn no_store(mut resp: axum::response::Response) -> axum::response::Response {
    resp.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    resp
}
