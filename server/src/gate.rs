//! The gate in front of each route group ([`GateLayer`]): counts and times every request for
//! `/metrics` ([`crate::http_metrics`]) and, for the groups that need Redis for every call (the
//! warrior API and the live feeds), answers 503 at once while Redis does not answer
//! ([`crate::redis_watch`]), before the body is read or anything queues. `routes` applies it
//! with the group's request timeout (tower-http's) in one `Router::layer` call.
//!
//! These were two `from_fn` middlewares, each applied by a `Router::layer` of its own, which
//! wraps every route of the group in a boxed service whose call clones a box and boxes its
//! future: a warrior call went through nine such levels. One service with a future of its own
//! type does both without a box (bench/README.md, "One layer per route group").

use crate::{
    http_metrics::{Group, HttpMetrics},
    redis_watch::RedisWatch,
    web::ApiError,
};
use axum::{
    extract::Request,
    response::{IntoResponse, Response},
};
use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Instant,
};

/// What a route group's gate does.
#[derive(Clone)]
struct Gate {
    metrics: Arc<HttpMetrics>,
    group: Group,
    /// Refuse every call while this says Redis does not answer.
    redis: Option<RedisWatch>,
}

/// The gate of one route group (`Router::layer`).
#[derive(Clone)]
pub struct GateLayer(Gate);

impl GateLayer {
    /// A gate that counts `group`'s requests into `metrics`, and does nothing else.
    pub fn new(metrics: Arc<HttpMetrics>, group: &'static str) -> Self {
        Self(Gate {
            metrics,
            group: Group(group),
            redis: None,
        })
    }

    /// Also answers 503 with `Retry-After` at once while `redis` says Redis does not answer.
    pub fn refusing_while_down(mut self, redis: RedisWatch) -> Self {
        self.0.redis = Some(redis);
        self
    }
}

impl<S> tower::Layer<S> for GateLayer {
    type Service = GateService<S>;

    fn layer(&self, inner: S) -> GateService<S> {
        GateService {
            inner,
            gate: Arc::new(self.0.clone()),
        }
    }
}

/// A route behind its group's gate.
#[derive(Clone)]
pub struct GateService<S> {
    inner: S,
    gate: Arc<Gate>,
}

impl<S> tower::Service<Request> for GateService<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = GateFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let started = Instant::now();
        let down = self.gate.redis.as_ref().is_some_and(|r| !r.is_up());
        GateFuture {
            inner: (!down).then(|| self.inner.call(request)),
            started,
            gate: self.gate.clone(),
        }
    }
}

pin_project_lite::pin_project! {
    /// A call behind the gate: the route's own future (none when refused), counted when it
    /// ends.
    pub struct GateFuture<F> {
        #[pin]
        inner: Option<F>,
        started: Instant,
        gate: Arc<Gate>,
    }
}

impl<F> Future for GateFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = match this.inner.as_pin_mut() {
            None => ApiError::Internal(crate::store::StoreError::Unavailable(
                "redis does not answer".into(),
            ))
            .into_response(),
            Some(inner) => match inner.poll(cx) {
                Poll::Ready(Ok(response)) => response,
                Poll::Ready(Err(never)) => match never {},
                Poll::Pending => return Poll::Pending,
            },
        };
        let gate = &**this.gate;
        gate.metrics.record(
            gate.group,
            response.status(),
            this.started.elapsed().as_secs_f64(),
        );
        Poll::Ready(Ok(response))
    }
}
