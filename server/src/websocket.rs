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
mod tests {
    use super::*;

    /// A client frame: masked with `mask`.
    fn client(b0: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
        let mut out = vec![b0];
        match payload.len() {
            n @ 0..=125 => out.push(0x80 | n as u8),
            n @ 126..=0xFFFF => {
                out.push(0x80 | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(0x80 | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        out
    }

    #[test]
    fn the_accept_key_is_rfc_6455s_example() {
        assert_eq!(
            accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn text_frames_carry_each_length_form_and_read_back() {
        for len in [0, 1, 125, 126, 127, 65_535, 65_536, 70_000] {
            let payload = "x".repeat(len);
            let f = text(&payload);
            let header = match len {
                0..=125 => 2,
                126..=65_535 => 4,
                _ => 10,
            };
            assert_eq!(f.len(), header + len, "length {len}");
            assert_eq!(f[0], 0x81, "final text frame, unmasked");
            assert_eq!(text_payload(&f), Some(payload.as_str()), "length {len}");
        }
        assert_eq!(text_payload(&close(1000)), None);
        assert_eq!(text_payload(&text("abc")[..4]), None, "cut short");
    }

    #[test]
    fn client_frames_are_unmasked_and_taken_one_at_a_time() {
        let mut buf = client(0x89, b"hi", [1, 2, 3, 4]);
        buf.extend(client(0x81, &[b'a'; 300], [9, 8, 7, 6]));
        let whole = buf.clone();
        // Byte by byte: nothing until the first frame is complete.
        let mut partial = Vec::new();
        let mut frames = Vec::new();
        for b in whole {
            partial.push(b);
            while let Some(f) = parse(&mut partial).unwrap() {
                frames.push(f);
            }
        }
        assert!(partial.is_empty());
        assert_eq!(
            frames,
            vec![
                ClientFrame {
                    fin: true,
                    opcode: OP_PING,
                    payload: b"hi".to_vec()
                },
                ClientFrame {
                    fin: true,
                    opcode: OP_TEXT,
                    payload: vec![b'a'; 300]
                },
            ]
        );
    }

    #[test]
    fn frames_that_break_the_protocol_or_are_too_big_are_refused() {
        let unmasked = vec![0x81, 0x02, b'h', b'i'];
        assert_eq!(parse(&mut unmasked.clone()), Err(CLOSE_PROTOCOL_ERROR));
        let reserved = client(0xC1, b"hi", [1, 1, 1, 1]);
        assert_eq!(parse(&mut reserved.clone()), Err(CLOSE_PROTOCOL_ERROR));
        let long_ping = client(0x89, &[0; 126], [1, 1, 1, 1]);
        assert_eq!(parse(&mut long_ping.clone()), Err(CLOSE_PROTOCOL_ERROR));
        let fragmented_ping = client(0x09, b"x", [1, 1, 1, 1]);
        assert_eq!(
            parse(&mut fragmented_ping.clone()),
            Err(CLOSE_PROTOCOL_ERROR)
        );
        // Too big is known from the header alone, before the payload arrives.
        let mut huge = client(0x82, &vec![0; MAX_INCOMING + 1], [1, 1, 1, 1]);
        huge.truncate(16);
        assert_eq!(parse(&mut huge), Err(CLOSE_TOO_BIG));
    }

    /// What a reader makes of `bytes`, in order, until it needs more.
    fn read_all(bytes: &[u8]) -> Vec<Incoming> {
        let mut reader = Reader {
            buf: bytes.to_vec(),
            ..Reader::default()
        };
        let mut out = Vec::new();
        while let Some(incoming) = reader.next() {
            let end = matches!(incoming, Incoming::Violation(_) | Incoming::Close(_));
            out.push(incoming);
            if end {
                break;
            }
        }
        out
    }

    const M: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

    /// RFC 6455 sections 5 to 7, what a server MUST do with what a client sends, one case each
    /// (section and case in the message).
    #[test]
    fn rfc_6455_server_side_musts_of_sections_5_to_7() {
        use Incoming::{Close, Ping, Violation};
        let cases: Vec<(&str, Vec<u8>, Vec<Incoming>)> = vec![
            (
                "5.1 an unmasked frame",
                vec![0x81, 0x00],
                vec![Violation(1002)],
            ),
            ("5.2 RSV1 set", client(0xC1, b"", M), vec![Violation(1002)]),
            ("5.2 RSV2 set", client(0xA1, b"", M), vec![Violation(1002)]),
            ("5.2 RSV3 set", client(0x91, b"", M), vec![Violation(1002)]),
            (
                "5.2 RSV on a ping",
                client(0xC9, b"", M),
                vec![Violation(1002)],
            ),
            (
                "5.2 a 64-bit length with its top bit set",
                [&[0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1][..], &M].concat(),
                vec![Violation(1002)],
            ),
            (
                "5.4 a continuation with no message",
                client(0x80, b"x", M),
                vec![Violation(1002)],
            ),
            (
                "5.4 a new text frame inside a fragmented message",
                [client(0x01, b"a", M), client(0x81, b"b", M)].concat(),
                vec![Violation(1002)],
            ),
            (
                "5.4 a new binary frame inside a fragmented message",
                [client(0x02, b"a", M), client(0x82, b"b", M)].concat(),
                vec![Violation(1002)],
            ),
            (
                "5.4 control frames between fragments are answered",
                [
                    client(0x01, b"a", M),
                    client(0x89, b"p", M),
                    client(0x80, b"b", M),
                    client(0x89, b"q", M),
                ]
                .concat(),
                vec![Ping(b"p".to_vec()), Ping(b"q".to_vec())],
            ),
            (
                "5.5 a ping of 126 bytes",
                client(0x89, &[0; 126], M),
                vec![Violation(1002)],
            ),
            (
                "5.5 a fragmented ping",
                client(0x09, b"", M),
                vec![Violation(1002)],
            ),
            (
                "5.5 a fragmented close",
                client(0x08, b"", M),
                vec![Violation(1002)],
            ),
            (
                "5.5.1 a close without a body",
                client(0x88, b"", M),
                vec![Close(1000)],
            ),
            (
                "5.5.1 a close with one byte",
                client(0x88, b"\x03", M),
                vec![Violation(1002)],
            ),
            (
                "5.5.1 a close's code is echoed",
                client(0x88, b"\x0b\xb9bye", M),
                vec![Close(3001)],
            ),
            (
                "5.5.1 a close reason that is not UTF-8",
                client(
                    0x88,
                    b"\x03\xe8\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80",
                    M,
                ),
                vec![Violation(1007)],
            ),
            (
                "5.5.2 a ping is answered with its payload",
                client(0x89, b"hello", M),
                vec![Ping(b"hello".to_vec())],
            ),
            (
                "5.5.3 an unsolicited pong is ignored",
                [client(0x8A, b"x", M), client(0x89, b"y", M)].concat(),
                vec![Ping(b"y".to_vec())],
            ),
            (
                "5.6 a text message that is not UTF-8",
                client(0x81, b"\xce\xba\xe1\xbd", M),
                vec![Violation(1007)],
            ),
            (
                "5.6 a fragmented text message that is not UTF-8 once whole",
                [client(0x01, b"ok", M), client(0x80, b"\xff", M)].concat(),
                vec![Violation(1007)],
            ),
            (
                "5.6 a character split across fragments is UTF-8",
                [
                    client(0x01, b"\xce", M),
                    client(0x00, b"\xba", M),
                    client(0x80, b"", M),
                    client(0x89, b"", M),
                ]
                .concat(),
                vec![Ping(vec![])],
            ),
            (
                "5.6 binary data need not be UTF-8",
                [client(0x82, b"\xff\xfe", M), client(0x89, b"", M)].concat(),
                vec![Ping(vec![])],
            ),
            (
                "5.8 extensibility: a binary message of 0 bytes",
                [client(0x82, b"", M), client(0x89, b"z", M)].concat(),
                vec![Ping(b"z".to_vec())],
            ),
        ];
        let mut cases = cases;
        for op in [3u8, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] {
            cases.push((
                "5.2 an opcode RFC 6455 does not define",
                client(0x80 | op, b"", M),
                vec![Violation(1002)],
            ));
        }
        for (case, bytes, expected) in &cases {
            assert_eq!(&read_all(bytes), expected, "{case}");
        }
        // 7.4: the codes a peer may send in a close frame are answered with that code; the
        // others (reserved, never sent, unassigned) break the protocol.
        for code in 0u16..=5000 {
            let frame = client(0x88, &code.to_be_bytes(), M);
            let allowed = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
            let expected = if allowed {
                Close(code)
            } else {
                Violation(1002)
            };
            assert_eq!(read_all(&frame), vec![expected], "7.4 close code {code}");
        }
    }

    #[test]
    fn a_fragmented_message_past_the_limit_is_closed_with_1009() {
        let part = vec![b'a'; MAX_INCOMING / 2];
        let bytes = [
            client(0x01, &part, M),
            client(0x00, &part, M),
            client(0x80, b"x", M),
        ]
        .concat();
        assert_eq!(read_all(&bytes), vec![Incoming::Violation(CLOSE_TOO_BIG)]);
    }

    /// A handshake request with `headers` (and `method`), as the extractor sees it.
    async fn handshake(method: &str, headers: &[(&str, &str)]) -> Result<(), Rejection> {
        let mut req = axum::http::Request::builder().method(method).uri("/p/ws");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut req = req.body(()).unwrap();
        let on = hyper::upgrade::on(&mut req);
        let (mut parts, ()) = req.into_parts();
        parts.extensions.insert(on);
        Upgrade::from_request_parts(&mut parts, &())
            .await
            .map(|_| ())
    }

    /// RFC 6455 section 4: the opening handshake a server takes, and what it refuses.
    #[tokio::test]
    async fn rfc_6455_section_4_handshakes() {
        let good = [
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "WebSocket"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ];
        assert_eq!(
            handshake("GET", &good).await,
            Ok(()),
            "4.2.1 a good handshake"
        );
        assert_eq!(
            handshake("POST", &good).await,
            Err(Rejection::NotGet),
            "4.2.1 a POST"
        );
        let with = |name: &str, value: &'static str| {
            good.iter()
                .map(|&(k, v)| if k == name { (k, value) } else { (k, v) })
                .collect::<Vec<_>>()
        };
        let without = |name: &str| {
            good.iter()
                .copied()
                .filter(|(k, _)| *k != name)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            handshake("GET", &without("upgrade")).await,
            Err(Rejection::NotAnUpgrade)
        );
        assert_eq!(
            handshake("GET", &with("connection", "close")).await,
            Err(Rejection::NotAnUpgrade)
        );
        assert_eq!(
            handshake("GET", &with("sec-websocket-version", "8")).await,
            Err(Rejection::Version)
        );
        assert_eq!(
            handshake("GET", &without("sec-websocket-version")).await,
            Err(Rejection::Version)
        );
        assert_eq!(
            handshake("GET", &without("sec-websocket-key")).await,
            Err(Rejection::MissingKey)
        );
        for bad in [
            "",
            "not base64 at all!!!!!!!",
            "dGhlIHNhbXBsZSBub25jZQ",
            "dGhlIHNhbXBsZSBub25jZSE=",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert_eq!(
                handshake("GET", &with("sec-websocket-key", bad)).await,
                Err(Rejection::BadKey),
                "key {bad:?}"
            );
        }
        let twice = [
            &good[..],
            &[("sec-websocket-key", "AAAAAAAAAAAAAAAAAAAAAA==")],
        ]
        .concat();
        assert_eq!(
            handshake("GET", &twice).await,
            Err(Rejection::BadKey),
            "two keys"
        );
        // 4.4: a refused version is answered with the version this server speaks.
        let resp = Rejection::Version.into_response();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        assert_eq!(resp.headers()[header::SEC_WEBSOCKET_VERSION], "13");
    }

    proptest::proptest! {
        /// Whatever a viewer sends, in whatever pieces: no panic, at most one violation and
        /// then nothing, and never more than a frame's worth of bytes held.
        #[test]
        fn any_bytes_in_any_pieces_are_read_within_bounds(
            chunks in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..300), 0..40),
        ) {
            let mut reader = Reader::default();
            'feed: for chunk in chunks {
                reader.buf.extend_from_slice(&chunk);
                while let Some(incoming) = reader.next() {
                    if matches!(incoming, Incoming::Violation(_) | Incoming::Close(_)) {
                        break 'feed;
                    }
                }
                proptest::prop_assert!(reader.buf.len() <= MAX_INCOMING + 14 + 300);
                let held = reader.message.as_ref().map_or(0, |m| m.len);
                proptest::prop_assert!(held <= MAX_INCOMING);
            }
        }

        /// Well-formed frames of random kinds and payloads: each is taken as RFC 6455 says.
        #[test]
        fn random_frames_are_taken_as_their_kind_says(
            frames in proptest::collection::vec((0u8..16, proptest::bool::ANY, proptest::collection::vec(proptest::num::u8::ANY, 0..200)), 1..12),
        ) {
            let mut bytes = Vec::new();
            for (op, fin, payload) in &frames {
                bytes.extend(client(u8::from(*fin) << 7 | op, payload, M));
            }
            let out = read_all(&bytes);
            for incoming in &out {
                if let Incoming::Violation(code) = incoming {
                    proptest::prop_assert!([1002, 1007, 1009].contains(code));
                }
            }
        }
    }
}
