//! HTTP handlers: the warrior API, the public JSON, the live websocket, and their error type.

pub mod live;
pub mod public;
pub mod warrior;

use axum::{
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};

/// An API failure. Client mistakes carry a short reason; internal errors are logged and
/// answered with a generic body.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// 404: no such project or item, or nothing to give.
    #[error("{0}")]
    NotFound(String),
    /// 413: the body is too large.
    #[error("request body too large")]
    TooLarge,
    /// 500: something broke on our side (logged, not shown).
    #[error(transparent)]
    Internal(#[from] crate::store::StoreError),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Internal(e) => {
                tracing::error!(error = %e, "internal error");
                return (StatusCode::INTERNAL_SERVER_ERROR, "Internal error.\n").into_response();
            }
        };
        let mut resp = (status, format!("{self}\n")).into_response();
        resp.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        resp
    }
}

/// Result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;
