//! RFC 6455 conformance of the server side: handshakes, frames, close codes, UTF-8, and
//! random bytes.
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
