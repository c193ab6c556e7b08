//! Which pipeline calls: its token inside the tracker URL, or as a bearer token.
//!
//! An unmodified grab script joins `<tracker url>/<call>`; a pipeline's tracker URL carries its
//! token as a path segment, the way `multi=N/` carries a claim size:
//!
//! ```text
//! tracker url                       calls
//! http://HOST/SLUG/token=SECRET     /SLUG/token=SECRET/request, .../done, .../release, ...
//! http://HOST/SLUG/token=SECRET/    /SLUG/token=SECRET//request, ...//done, ...
//! .../SLUG/token=SECRET/multi=N/    /SLUG/token=SECRET/multi=N//request
//! ```
//!
//! [`take_token_segment`] runs before routing: it takes the segment out of the path (one extra
//! slash after it too) and keeps the secret for [`CallerPipeline`], so every route of the warrior
//! API serves the same calls with and without it. Other clients send
//! `Authorization: Bearer SECRET` (the admin token there is not a pipeline's).

use crate::{
    state::AppState,
    store::Pipeline,
    web::bearer,
    web::{is_admin, within_deadline, ApiError, ApiResult},
};
use axum::{
    extract::{FromRequestParts, Request},
    http::{request::Parts, uri::PathAndQuery, Uri},
};
use std::sync::Arc;

/// The secret a request's path carried (`/SLUG/token=SECRET/...`).
#[derive(Clone, Debug)]
pub struct PipelineSecret(pub String);

/// `/SLUG/token=SECRET/REST` as `/SLUG/REST` (`/SLUG//REST` too), with the secret kept in the
/// request's extensions; any other request as it is.
pub fn take_token_segment(mut req: Request) -> Request {
    let Some((path, secret)) = without_token(req.uri().path()) else {
        return req;
    };
    let path_and_query = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    let mut parts = req.uri().clone().into_parts();
    let Ok(pq) = PathAndQuery::try_from(path_and_query) else {
        return req;
    };
    parts.path_and_query = Some(pq);
    if let Ok(uri) = Uri::from_parts(parts) {
        *req.uri_mut() = uri;
        req.extensions_mut().insert(PipelineSecret(secret));
    }
    req
}

/// The path without its token segment, and the secret, if the path has one after a slug.
fn without_token(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix('/')?;
    let (slug, rest) = rest.split_once('/')?;
    let (segment, rest) = rest.split_once('/')?;
    let secret = segment.strip_prefix("token=")?;
    if !crate::store::valid_slug(slug) {
        return None;
    }
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    Some((format!("/{slug}/{rest}"), secret.to_string()))
}

/// The pipeline a warrior call comes from: `None` without a token; 403 for a secret no pipeline
/// has (unknown, or revoked).
pub struct CallerPipeline(pub Option<Arc<Pipeline>>);

impl CallerPipeline {
    /// The pipeline's name, empty without one.
    pub fn name(&self) -> &str {
        self.0.as_deref().map_or("", |p| p.name.as_str())
    }
}

impl FromRequestParts<AppState> for CallerPipeline {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let secret = match parts.extensions.get::<PipelineSecret>() {
            Some(s) => Some(s.0.clone()),
            None if is_admin(&parts.headers, state.config.admin_token.as_deref()) => None,
            None => bearer(&parts.headers).map(String::from),
        };
        let Some(secret) = secret else {
            return Ok(CallerPipeline(None));
        };
        let lookup = async { Ok(state.store.people().pipeline_by_secret(&secret).await?) };
        match within_deadline(state, lookup).await? {
            Some(p) => Ok(CallerPipeline(Some(p))),
            None => Err(ApiError::forbidden("Unknown or revoked pipeline token.")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::without_token;

    #[test]
    fn the_token_segment_leaves_the_path() {
        let t = |p: &str| without_token(p).map(|(path, s)| format!("{path} {s}"));
        assert_eq!(t("/p/token=abc/request").as_deref(), Some("/p/request abc"));
        assert_eq!(
            t("/p/token=abc//request").as_deref(),
            Some("/p/request abc")
        );
        assert_eq!(
            t("/p/token=abc/multi=5//request").as_deref(),
            Some("/p/multi=5//request abc")
        );
        assert_eq!(
            t("/p/token=abc/done+request").as_deref(),
            Some("/p/done+request abc")
        );
        assert_eq!(t("/p/token=/done").as_deref(), Some("/p/done "));
        // Not after a project's slug, or not a token segment: left alone.
        assert_eq!(t("/admin/token=abc/api/overview"), None);
        assert_eq!(t("/p/multi=5//request"), None);
        assert_eq!(t("/p/request"), None);
        assert_eq!(t("/p/token=abc"), None);
    }
}
