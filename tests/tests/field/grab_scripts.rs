//! The grab scripts' own calls beside seesaw's: the clock check of `/now` and the backfeed.
//! ArchiveTeam/urls-grab at 343d732bc3fedb1361342c053dd1ed746dd1f6dd (`pipeline.py` `CheckIP`,
//! `urls.lua` backfeed), ArchiveTeam/telegram-grab at be2f05609497c9176d56cfe9baeeccf1660c7df8
//! (`telegram.lua`: no `delimiter` parameter), ArchiveTeam/youtube-grab at
//! 6ff926964e06db95b677574d4fab16a9928a854e (`youtube.lua`: keys carrying `?skipbloom=1` or
//! `?shard=`).

use tests::TestApp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `CheckIP`'s expression over wget-at's `--save-headers` output, whole: the status line, then
/// exactly these headers in this order, then the time with no line end.
fn clock_check_passes(raw: &str) -> bool {
    let Some((head, body)) = raw.split_once("\r\n\r\n") else {
        return false;
    };
    let lines: Vec<&str> = head.split("\r\n").collect();
    let [status, server, date, ctype, conn, len, cache] = lines[..] else {
        return false;
    };
    let date_ok = date.strip_prefix("Date: ").is_some_and(|d| {
        // `[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} 202[0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} GMT`
        let b = d.as_bytes();
        d.len() == 29
            && b[0].is_ascii_uppercase()
            && d[5..7].bytes().all(|c| c.is_ascii_digit())
            && d[12..15] == *"202"
            && d.ends_with(" GMT")
    });
    let len_ok = len
        .strip_prefix("Content-Length: 1")
        .is_some_and(|d| d.len() == 1 && d.as_bytes()[0].is_ascii_digit());
    let body_ok = body.split_once('.').is_some_and(|(s, ms)| {
        s.len() == 10
            && s.bytes().all(|c| c.is_ascii_digit())
            && (1..=3).contains(&ms.len())
            && ms.bytes().all(|c| c.is_ascii_digit())
    });
    status == "HTTP/1.1 200 OK"
        && server == "Server: openresty"
        && date_ok
        && ctype == "Content-Type: text/plain"
        && conn == "Connection: keep-alive"
        && len_ok
        && cache == "Cache-Control: no-store"
        && body_ok
}

#[tokio::test]
async fn the_clock_check_matches_now_as_the_grab_scripts_read_it() {
    let app = TestApp::start().await;
    // wget-at's request: HTTP/1.1, its own headers, gzip not asked for.
    let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    s.write_all(
        b"GET /now HTTP/1.1\r\nUser-Agent: Wget/1.21.3-at.20231213.01\r\nAccept: */*\r\n\
          Accept-Encoding: identity\r\nHost: legacy-api.arpa.li\r\nConnection: Keep-Alive\r\n\r\n",
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    // The whole answer is in once its announced length has come.
    loop {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if body.len() >= len {
                break;
            }
        }
    }
    let raw = String::from_utf8(raw).unwrap();
    assert!(clock_check_passes(&raw), "{raw:?}");
    // And the time is the server's (`float(stdout.rsplit(b'\n', 1)[1])`, within 180 s).
    let t: f64 = raw.rsplit('\n').next().unwrap().parse().unwrap();
    let now = server::store::now_ms() as f64 / 1000.0;
    assert!((now - t).abs() < 5.0, "{t} vs {now}");
}

#[tokio::test]
async fn backfeed_as_urls_telegram_and_youtube_grab_post_it_is_answered_status_code_200() {
    let app = TestApp::start().await;
    app.project("urls", &[]).await;
    app.settings("urls", |s| s.backfeed_key = "glx7ansh4e17aii".into())
        .await;
    let key = "urls-glx7ansh4e17aii";
    let ask = |query: &str| format!("/backfeed/legacy/{key}{query}");
    // urls-grab: `make_query` sorts its keys and escapes every byte but [A-Za-z0-9_].
    let body = b"https://a.example/\x1fhttps://a.example/\x1fdepth=2\0https://b.example/\x1fhttps://b.example/\0".to_vec();
    // telegram-grab: no delimiter parameter, NUL-joined, a trailing NUL.
    let plain = b"telegram.me/s/one\0telegram.me/s/two\0".to_vec();
    for (query, body, added) in [
        (
            "?delimiter=%00&itemseparator=%1F&shard=periodic2026332",
            body,
            2,
        ),
        ("", plain.clone(), 2),
        ("?skipbloom=1", plain, 2),
    ] {
        let r = app
            .post_with(
                &ask(query),
                &[("content-type", "application/x-www-form-urlencoded")],
                body,
            )
            .await;
        assert_eq!(r.status, 200, "{query}: {}", r.body);
        // `cjson.decode(body)["status_code"] == 200`: a number.
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["status_code"], serde_json::json!(200), "{query}: {v}");
        assert_eq!(
            v["added"].as_u64().unwrap() + v["duplicates"].as_u64().unwrap(),
            added,
            "{query}: {v}"
        );
    }
}
