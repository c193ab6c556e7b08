//! The server side of the WebSocket protocol (RFC 6455), as much of it as the leaderboard's
//! viewers use, written so that one message goes to thousands of viewers without a copy each.
//!
//! A server's frames are not masked, so a message encoded once ([`text`]) is the very bytes every
//! socket is sent: each viewer's write goes straight from the shared buffer to the kernel.
//! tungstenite (axum's websocket) copies every message into each socket's own buffer first; at
//! 5,000 viewers that copy, into 5,000 cold buffers, was a fifth of the tracker's CPU
//! (`bench/README.md`, "Live viewers").
//!
//! What viewers send is read by [`Socket::recv`]: pings are answered, close is returned, data
//! messages are read and dropped (a viewer has nothing to say), and a frame that breaks the
//! protocol or is larger than [`MAX_INCOMING`] ends the connection with the close code for it.

use axum::{
    body::{Body, Bytes},
    extract::FromRequestParts,
    http::{header, request::Parts, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use base64::Engine as _;
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use sha1::{Digest, Sha1};
use std::future::Future;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The largest message a viewer may send (it has nothing to say but close).
pub const MAX_INCOMING: usize = 16 * 1024;

/// How much is read from a viewer's socket at a time.
const READ_CHUNK: usize = 512;

/// The GUID a server appends to the client's key (RFC 6455, 1.3).
const ACCEPT_GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

/// Close codes (RFC 6455, 7.4.1).
pub const CLOSE_NORMAL: u16 = 1000;
pub const CLOSE_GOING_AWAY: u16 = 1001;
pub const CLOSE_PROTOCOL_ERROR: u16 = 1002;
pub const CLOSE_INVALID_DATA: u16 = 1007;
pub const CLOSE_TOO_BIG: u16 = 1009;

/// Whether a peer may send close code `code` (RFC 6455, 7.4): the codes the RFC and IANA's
/// registry define for use in a frame, and the private range 3000-4999. 1004 (reserved), 1005
/// and 1006 (never on the wire, "no code" and "gone") and 1015 (TLS) may not be sent.
fn sendable_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// A whole, unfragmented text message: its frame header, then `payload`.
pub fn text(payload: &str) -> Bytes {
    frame(OP_TEXT, payload.as_bytes())
}

/// The text that [`text`] framed (for tests and tools): `None` if `frame` is not one whole
/// unmasked text frame.
pub fn text_payload(frame: &[u8]) -> Option<&str> {
    let (header, len) = match *frame {
        [0x81, n @ 0..=125, ..] => (2, n as usize),
        [0x81, 126, a, b, ..] => (4, u16::from_be_bytes([a, b]) as usize),
        [0x81, 127, ..] => (
            10,
            u64::from_be_bytes(frame.get(2..10)?.try_into().ok()?) as usize,
        ),
        _ => return None,
    };
    let payload = frame.get(header..)?;
    (payload.len() == len)
        .then(|| std::str::from_utf8(payload).ok())
        .flatten()
}

/// One final, unmasked frame of `opcode` carrying `payload`.
fn frame(opcode: u8, payload: &[u8]) -> Bytes {
    let len = payload.len();
    let mut out = Vec::with_capacity(len + 10);
    out.push(0x80 | opcode);
    match len {
        0..=125 => out.push(len as u8),
        126..=0xFFFF => {
            out.push(126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out.into()
}

/// A close frame with `code`.
fn close(code: u16) -> Bytes {
    frame(OP_CLOSE, &code.to_be_bytes())
}

/// `Sec-WebSocket-Accept` for the client's `Sec-WebSocket-Key`.
fn accept_key(key: &[u8]) -> String {
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(ACCEPT_GUID);
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// Whether `key` is a `Sec-WebSocket-Key`: the base64 of 16 bytes, 24 characters with padding.
fn valid_key(key: &[u8]) -> bool {
    key.len() == 24
        && base64::engine::general_purpose::STANDARD
            .decode(key)
            .is_ok_and(|k| k.len() == 16)
}

/// Whether header `name` lists `token` (comma-separated, any case).
fn lists(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// A checked WebSocket opening handshake (an extractor); [`Upgrade::on_upgrade`] answers it.
/// Requests that are not one get a 400 saying what is missing; a connection that cannot be
/// taken over (HTTP/2) gets 426.
pub struct Upgrade {
    on_upgrade: OnUpgrade,
    accept: String,
}

/// Why a request is not a WebSocket opening handshake this server can take: answered as a 400
/// (426 when the connection cannot be taken over) with the reason.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// No `Connection: upgrade` and `Upgrade: websocket`.
    #[error("Expected a WebSocket upgrade (Connection: upgrade, Upgrade: websocket).")]
    NotAnUpgrade,
    /// `Sec-WebSocket-Version` is not 13.
    #[error("Unsupported WebSocket version: Sec-WebSocket-Version must be 13.")]
    Version,
    /// No `Sec-WebSocket-Key`.
    #[error("Missing Sec-WebSocket-Key.")]
    MissingKey,
    /// `Sec-WebSocket-Key` is not the base64 of 16 bytes (RFC 6455, 4.1), or given twice.
    #[error("Sec-WebSocket-Key must be one base64-encoded 16-byte value.")]
    BadKey,
    /// The handshake is not a GET (RFC 6455, 4.1).
    #[error("A WebSocket handshake is a GET request.")]
    NotGet,
    /// The connection cannot be handed over (HTTP/2).
    #[error("This connection cannot be upgraded to a WebSocket.")]
    CannotUpgrade,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let status = match self {
            Rejection::CannotUpgrade => StatusCode::UPGRADE_REQUIRED,
            _ => StatusCode::BAD_REQUEST,
        };
        let mut resp = (status, format!("{self}\n")).into_response();
        let headers = resp.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        // RFC 6455, 4.4: a server refusing the client's version names the versions it speaks.
        if self == Rejection::Version {
            headers.insert(
                header::SEC_WEBSOCKET_VERSION,
                HeaderValue::from_static("13"),
            );
        }
        resp
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Upgrade {
    type Rejection = Rejection;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Rejection> {
        let headers = &parts.headers;
        if parts.method != axum::http::Method::GET {
            return Err(Rejection::NotGet);
        }
        if !lists(headers, header::CONNECTION, "upgrade")
            || !lists(headers, header::UPGRADE, "websocket")
        {
            return Err(Rejection::NotAnUpgrade);
        }
        if headers
            .get(header::SEC_WEBSOCKET_VERSION)
            .map(|v| v.as_bytes())
            != Some(b"13")
        {
            return Err(Rejection::Version);
        }
        let mut keys = headers.get_all(header::SEC_WEBSOCKET_KEY).iter();
        let (Some(key), None) = (keys.next(), keys.next()) else {
            return Err(if headers.contains_key(header::SEC_WEBSOCKET_KEY) {
                Rejection::BadKey
            } else {
                Rejection::MissingKey
            });
        };
        if !valid_key(key.as_bytes()) {
            return Err(Rejection::BadKey);
        }
        let accept = accept_key(key.as_bytes());
        let Some(on_upgrade) = parts.extensions.remove::<OnUpgrade>() else {
            return Err(Rejection::CannotUpgrade);
        };
        Ok(Self { on_upgrade, accept })
    }
}

impl Upgrade {
    /// Answers the handshake (101) and runs `serve` on the socket once the connection is
    /// handed over.
    pub fn on_upgrade<F, Fut>(self, serve: F) -> Response
    where
        F: FnOnce(Socket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let Upgrade { on_upgrade, accept } = self;
        tokio::spawn(async move {
            match on_upgrade.await {
                Ok(upgraded) => serve(Socket::new(TokioIo::new(upgraded))).await,
                Err(e) => tracing::debug!(error = %e, "websocket upgrade failed"),
            }
        });
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let headers = resp.headers_mut();
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        if let Ok(accept) = HeaderValue::from_str(&accept) {
            headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
        }
        resp
    }
}

/// What a viewer sent, as far as the server acts on it.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming {
    /// A ping: answer with [`Socket::pong`].
    Ping(Vec<u8>),
    /// The viewer closes: answer with [`Socket::close`] and this code (the viewer's own, echoed
    /// as RFC 6455 5.5.1 suggests, or 1000 when it gave none).
    Close(u16),
    /// The viewer broke the protocol: close with this code.
    Violation(u16),
    /// The connection ended or failed.
    Gone,
}

/// A frame read off the wire.
#[derive(Debug, PartialEq, Eq)]
struct ClientFrame {
    fin: bool,
    opcode: u8,
    payload: Vec<u8>,
}

/// Takes one whole client frame off the front of `buf`: `Ok(None)` until it is all there,
/// `Err(code)` when it breaks the protocol or is larger than [`MAX_INCOMING`].
fn parse(buf: &mut Vec<u8>) -> Result<Option<ClientFrame>, u16> {
    let [b0, b1, ..] = buf[..] else {
        return Ok(None);
    };
    let (fin, opcode) = (b0 & 0x80 != 0, b0 & 0x0F);
    // No extension is negotiated, so the reserved bits are 0; clients mask every frame.
    if b0 & 0x70 != 0 || b1 & 0x80 == 0 {
        return Err(CLOSE_PROTOCOL_ERROR);
    }
    let (len, mut at) = match b1 & 0x7F {
        126 => match buf.get(2..4) {
            Some(b) => (u16::from_be_bytes([b[0], b[1]]) as u64, 4),
            None => return Ok(None),
        },
        127 => match buf.get(2..10) {
            // RFC 6455, 5.2: the most significant bit of a 64-bit length is 0.
            Some(b) if b[0] & 0x80 != 0 => return Err(CLOSE_PROTOCOL_ERROR),
            Some(b) => (u64::from_be_bytes(b.try_into().unwrap_or_default()), 10),
            None => return Ok(None),
        },
        n => (n as u64, 2),
    };
    let control = opcode & 0x08 != 0;
    if control && (len > 125 || !fin) {
        return Err(CLOSE_PROTOCOL_ERROR);
    }
    if len > MAX_INCOMING as u64 {
        return Err(CLOSE_TOO_BIG);
    }
    let Some(mask) = buf.get(at..at + 4).map(|m| [m[0], m[1], m[2], m[3]]) else {
        return Ok(None);
    };
    at += 4;
    let end = at + len as usize;
    if buf.len() < end {
        return Ok(None);
    }
    let payload = buf[at..end]
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ mask[i % 4])
        .collect();
    buf.drain(..end);
    Ok(Some(ClientFrame {
        fin,
        opcode,
        payload,
    }))
}

/// A viewer's connection after the handshake.
pub struct Socket {
    io: TokioIo<Upgraded>,
    /// When the viewer last sent anything (a pong to our ping counts).
    heard: std::time::Instant,
    /// What the viewer sent, taken as frames.
    reader: Reader,
}

/// The client's side of a connection, read: the bytes not yet taken as frames, and a data
/// message under way.
#[derive(Debug, Default)]
struct Reader {
    buf: Vec<u8>,
    message: Option<Message>,
}

/// A data message under way: its length so far, and a text message's bytes (checked as UTF-8
/// when it is whole; at most [`MAX_INCOMING`]).
#[derive(Debug)]
struct Message {
    len: usize,
    text: Option<Vec<u8>>,
}

impl Socket {
    fn new(io: TokioIo<Upgraded>) -> Self {
        Self {
            io,
            heard: std::time::Instant::now(),
            reader: Reader::default(),
        }
    }

    /// Writes `frame`, a message framed by [`text`], as it is.
    pub async fn send(&mut self, frame: &Bytes) -> std::io::Result<()> {
        self.io.write_all(frame).await
    }

    /// Sends a ping: a live viewer answers with a pong, which [`Socket::heard`] then reflects.
    pub async fn ping(&mut self) -> std::io::Result<()> {
        self.io.write_all(&frame(OP_PING, b"")).await
    }

    /// When the viewer last sent anything.
    pub fn heard(&self) -> std::time::Instant {
        self.heard
    }

    /// Answers a ping.
    pub async fn pong(&mut self, payload: &[u8]) -> std::io::Result<()> {
        self.io.write_all(&frame(OP_PONG, payload)).await
    }

    /// Sends a close frame with `code`, then ends the connection.
    pub async fn close(mut self, code: u16) {
        if self.io.write_all(&close(code)).await.is_ok() {
            let _ = self.io.shutdown().await;
        }
    }

    /// The next thing the viewer sent that the server acts on; data messages are read and
    /// dropped. Cancel safe: what was read stays in the buffer for the next call.
    pub async fn recv(&mut self) -> Incoming {
        loop {
            if let Some(incoming) = self.reader.next() {
                return incoming;
            }
            self.reader.buf.reserve(READ_CHUNK);
            match self.io.read_buf(&mut self.reader.buf).await {
                Ok(0) | Err(_) => return Incoming::Gone,
                Ok(_) => self.heard = std::time::Instant::now(),
            }
        }
    }
}

impl Reader {
    /// The next thing in the bytes read that the server acts on; `None` until more arrive.
    fn next(&mut self) -> Option<Incoming> {
        loop {
            match parse(&mut self.buf) {
                Err(code) => return Some(Incoming::Violation(code)),
                Ok(Some(frame)) => {
                    if let Some(incoming) = self.take(frame) {
                        return Some(incoming);
                    }
                }
                Ok(None) => return None,
            }
        }
    }

    /// What a whole frame means for the server, if anything.
    fn take(&mut self, frame: ClientFrame) -> Option<Incoming> {
        match frame.opcode {
            OP_PING => Some(Incoming::Ping(frame.payload)),
            OP_PONG => None,
            OP_CLOSE => Some(close_of(&frame.payload)),
            OP_TEXT | OP_BINARY if self.message.is_none() => {
                let message = Message {
                    len: frame.payload.len(),
                    text: (frame.opcode == OP_TEXT).then_some(frame.payload),
                };
                self.data(message, frame.fin)
            }
            OP_CONTINUATION => match self.message.take() {
                Some(mut message) => {
                    message.len += frame.payload.len();
                    if message.len > MAX_INCOMING {
                        return Some(Incoming::Violation(CLOSE_TOO_BIG));
                    }
                    if let Some(text) = &mut message.text {
                        text.extend_from_slice(&frame.payload);
                    }
                    self.data(message, frame.fin)
                }
                None => Some(Incoming::Violation(CLOSE_PROTOCOL_ERROR)),
            },
            // A new data message inside another, or an opcode RFC 6455 does not define.
            _ => Some(Incoming::Violation(CLOSE_PROTOCOL_ERROR)),
        }
    }

    /// A data message so far: kept while more frames follow; once whole, dropped (a viewer has
    /// nothing to say), unless it is text that is not UTF-8 (RFC 6455, 8.1: fail with 1007).
    fn data(&mut self, message: Message, fin: bool) -> Option<Incoming> {
        if !fin {
            self.message = Some(message);
            return None;
        }
        match message.text {
            Some(text) if std::str::from_utf8(&text).is_err() => {
                Some(Incoming::Violation(CLOSE_INVALID_DATA))
            }
            _ => None,
        }
    }
}

/// What a close frame's body means (RFC 6455, 5.5.1 and 7.4): none is a close without a code
/// (answered 1000); one byte, or a code no peer may send, breaks the protocol (1002); a reason
/// that is not UTF-8 is invalid data (1007).
fn close_of(body: &[u8]) -> Incoming {
    match body {
        [] => Incoming::Close(CLOSE_NORMAL),
        [_] => Incoming::Violation(CLOSE_PROTOCOL_ERROR),
        [a, b, reason @ ..] => {
            let code = u16::from_be_bytes([*a, *b]);
            if !sendable_close_code(code) {
                Incoming::Violation(CLOSE_PROTOCOL_ERROR)
            } else if std::str::from_utf8(reason).is_err() {
                Incoming::Violation(CLOSE_INVALID_DATA)
            } else {
                Incoming::Close(code)
            }
        }
    }
}

#[cfg(test)]
mod tests;
