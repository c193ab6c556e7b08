//! A fault-injecting HTTP proxy in front of a real S3-speaking server ([`crate::s3::S3`]), for
//! tests of what a failing object store call leaves behind. Clients use
//! [`S3Proxy::storage_url`]; every request is counted, passed on with its headers as they
//! came (the signature covers the `Host`), and its answer passed back, but the one a
//! [`S3Fault`] is set for: it fails (answered 503 and never passed on, and so are the library's
//! retries of it), or it runs and its answer is lost (passed on, then answered 500 in place of
//! the server's answer; the library's retry then meets what the request did).

use axum::{body::Body, extract::Request, response::Response};
use std::sync::{Arc, Mutex};

/// What happens to the request a fault is set for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum S3Fault {
    /// Never reaches the server: answered 503, and so are its retries.
    Fail,
    /// Reaches the server and runs; its answer is replaced by a 500.
    Lost,
}

impl S3Fault {
    /// Each way a call can go wrong, with a letter for it: fails (`f`), or runs and its answer
    /// is lost (`x`).
    pub const EACH: [(&'static str, S3Fault); 2] = [("f", S3Fault::Fail), ("x", S3Fault::Lost)];
}

#[derive(Default)]
struct State {
    /// Requests since the last [`S3Proxy::clear`] or [`S3Proxy::fault_at`].
    count: usize,
    /// Each one's method and path.
    seen: Vec<String>,
    /// The request (1-based) to fault, and how.
    fault: Option<(usize, S3Fault)>,
    /// The request that failed, whose retries fail too (until another request comes).
    failing: Option<String>,
}

/// A running proxy; it stops with the test's runtime.
pub struct S3Proxy {
    /// Its port on 127.0.0.1.
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl S3Proxy {
    /// A proxy in front of the S3 server on 127.0.0.1:`target`.
    pub async fn start(target: u16) -> S3Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        let state = Arc::new(Mutex::new(State::default()));
        let client = reqwest::Client::new();
        let shared = state.clone();
        let app = axum::Router::new().fallback(move |req: Request| {
            let (state, client) = (shared.clone(), client.clone());
            async move { forward(req, target, &state, &client).await }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        S3Proxy { port, state }
    }

    /// The `TRACKER_STORAGE` of the bucket's `prefix`, through this proxy.
    pub fn storage_url(&self, prefix: &str) -> String {
        crate::s3::storage_url_at(self.port, prefix)
    }

    /// Counts from zero again, with `fault` set for request `at` (1-based).
    pub fn fault_at(&self, at: usize, fault: S3Fault) {
        let mut s = self.state.lock().unwrap();
        *s = State {
            fault: Some((at, fault)),
            ..State::default()
        };
    }

    /// Counts from zero again, with no fault.
    pub fn clear(&self) {
        *self.state.lock().unwrap() = State::default();
    }

    /// The method and path of each request since the last clear.
    pub fn seen(&self) -> Vec<String> {
        self.state.lock().unwrap().seen.clone()
    }
}

fn answer(status: u16, text: &str) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/xml")
        .body(Body::from(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code>\
             <Message>{text}</Message></Error>"
        )))
        .expect("a response")
}

async fn forward(
    req: Request,
    target: u16,
    state: &Mutex<State>,
    client: &reqwest::Client,
) -> Response {
    let what = format!(
        "{} {}",
        req.method(),
        req.uri().path_and_query().map_or("/", |p| p.as_str())
    );
    let fault = {
        let mut s = state.lock().unwrap();
        s.count += 1;
        s.seen.push(what.clone());
        let n = s.count;
        if s.failing.as_deref() == Some(what.as_str()) {
            Some(S3Fault::Fail)
        } else {
            s.failing = None;
            match s.fault {
                Some((at, f)) if at == n => {
                    if f == S3Fault::Fail {
                        s.failing = Some(what.clone());
                    }
                    Some(f)
                }
                _ => None,
            }
        }
    };
    if fault == Some(S3Fault::Fail) {
        return answer(503, "a fault set by the test");
    }
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return answer(400, "the request's body could not be read");
    };
    let url = format!(
        "http://127.0.0.1:{target}{}",
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut out = client.request(parts.method, url).body(body);
    for (name, value) in &parts.headers {
        if name != "content-length" && name != "transfer-encoding" {
            out = out.header(name, value);
        }
    }
    let got = match out.send().await {
        Ok(r) => r,
        Err(e) => return answer(502, &format!("the server: {e}")),
    };
    let status = got.status();
    let headers = got.headers().clone();
    let Ok(bytes) = got.bytes().await else {
        return answer(502, "the server's answer could not be read");
    };
    if fault == Some(S3Fault::Lost) {
        return answer(500, "an answer lost by the test");
    }
    let mut resp = Response::builder().status(status);
    for (name, value) in &headers {
        // (Its length kept: a `HEAD`'s answer has no body but says the object's size.)
        if name != "transfer-encoding" && name != "connection" {
            resp = resp.header(name, value);
        }
    }
    resp.body(Body::from(bytes)).expect("a response")
}
