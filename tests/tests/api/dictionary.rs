//! `GET /dictionary?project=SLUG`, as urls-, reddit-, telegram- and imgur-grab fetch it every 30
//! minutes: `{"id","url","sha256"}`; they download `url`, check its SHA-256, decompress it when
//! it is zstd-framed, and compress their WARCs with it. `tracker dictionary train|set|show`.

use sha2::{Digest, Sha256};
use tests::TestApp;

/// Pages of one site: the same boilerplate, a little of their own.
fn sample(i: usize) -> Vec<u8> {
    format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: https://example.org/post/{i}\r\n\
         Content-Type: application/http; msgtype=response\r\n\r\nHTTP/1.1 200 OK\r\n\
         Content-Type: text/html; charset=utf-8\r\nServer: nginx\r\n\r\n<!doctype html><html>\
         <head><title>Post {i} - Example forum</title><link rel=stylesheet href=/static/site.css>\
         </head><body><nav><a href=/>Home</a> <a href=/latest>Latest</a> <a href=/top>Top</a></nav>\
         <article id=post-{i}><h1>Thread number {i}</h1><p>Posted by user{} on day {}</p>\
         <p>{}</p></article><footer>Example forum, all rights reserved. Powered by nothing.\
         </footer></body></html>\r\n",
        i % 37,
        i % 365,
        "lorem ipsum dolor sit amet ".repeat(1 + i % 7)
    )
    .into_bytes()
}

async fn json(app: &TestApp, path: &str) -> (u16, serde_json::Value) {
    let r = app.get(path).await;
    (
        r.status,
        serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null),
    )
}

/// Downloads `url` as a grab script does and checks it as `ZstdDict` does: its bytes and their
/// SHA-256; the dictionary itself (decompressed when framed).
async fn fetch_checked(app: &TestApp, meta: &serde_json::Value) -> Vec<u8> {
    let r = app
        .http
        .get(meta["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable"),
        "an id's bytes never change"
    );
    let raw = r.bytes().await.unwrap().to_vec();
    let sha: String = Sha256::digest(&raw)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(sha, meta["sha256"], "the SHA-256 the script checks");
    if raw.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        zstd::bulk::decompress(&raw, 1 << 24).expect("a frame with its content size")
    } else {
        raw
    }
}

#[tokio::test]
async fn a_trained_dictionary_is_served_checked_and_compresses_what_the_grab_downloads() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    let (status, _) = json(&app, "/dictionary?project=p").await;
    assert_eq!(status, 404, "none yet");
    let (status, _) = json(&app, "/dictionary?project=nope").await;
    assert_eq!(status, 404);

    // Trained from sample files; the measure on held-back samples is printed.
    let dir = app.dir.join("samples");
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<String> = (0..300)
        .map(|i| {
            let f = dir.join(format!("s{i}"));
            std::fs::write(&f, sample(i)).unwrap();
            f.display().to_string()
        })
        .collect();
    let mut args = vec!["dictionary", "train", "p", "--max-size", "16384"];
    args.extend(files.iter().map(String::as_str));
    let run = app.cli(&args, b"");
    assert!(run.ok, "{} {}", run.out, run.err);
    assert!(run.out.contains("without a dictionary"), "{}", run.out);
    let (status, meta) = json(&app, "/dictionary?project=p").await;
    assert_eq!(status, 200, "{meta}");
    assert_eq!(
        meta["id"], "1000000001",
        "ten digits, as a string (megawarc)"
    );
    let dict = fetch_checked(&app, &meta).await;
    // It does what the grab uses it for: a page compresses smaller with it, and comes back.
    let page = sample(1000);
    let mut with = zstd::bulk::Compressor::with_dictionary(3, &dict).unwrap();
    let packed = with.compress(&page).unwrap();
    assert!(packed.len() < zstd::bulk::compress(&page, 3).unwrap().len());
    let mut back = zstd::bulk::Decompressor::with_dictionary(&dict).unwrap();
    assert_eq!(back.decompress(&packed, 1 << 20).unwrap(), page);

    // A new one, zstd-framed as an admin may upload it: served as uploaded, the old one kept.
    let framed = zstd::bulk::compress(&dict, 19).unwrap();
    let file = app.dir.join("dict.zst");
    std::fs::write(&file, &framed).unwrap();
    let run = app.cli(&["dictionary", "set", "p", file.to_str().unwrap()], b"");
    assert!(run.ok, "{} {}", run.out, run.err);
    let (_, meta2) = json(&app, "/dictionary?project=p").await;
    assert_eq!(meta2["id"], "1000000002");
    assert_eq!(
        fetch_checked(&app, &meta2).await,
        dict,
        "decompressed, the same"
    );
    assert_eq!(
        fetch_checked(&app, &meta).await,
        dict,
        "id 1 still downloadable"
    );

    // What is not a dictionary is refused, and changes nothing.
    let junk = app.dir.join("junk");
    std::fs::write(&junk, b"not a dictionary at all").unwrap();
    let run = app.cli(&["dictionary", "set", "p", junk.to_str().unwrap()], b"");
    assert!(!run.ok);
    assert!(run.err.contains("not a zstd dictionary"), "{}", run.err);
    let (_, now) = json(&app, "/dictionary?project=p").await;
    assert_eq!(now, meta2);
    let r = app.get("/dictionary/p/99").await;
    assert_eq!(r.status, 404);
}

/// Redis's count of bytes it has sent (`INFO stats`).
async fn redis_sent(app: &TestApp) -> u64 {
    use fred::prelude::*;
    let info: String = app
        .store
        .client()
        .info(Some(fred::types::InfoKind::Stats))
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_net_output_bytes:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("total_net_output_bytes")
}

/// A dictionary is up to 16 MiB: a crowd of warriors starting at once (or anyone asking a few
/// hundred times a second) is served from the process's copy, its bytes read from Redis once,
/// and one address is limited like the public reads.
#[tokio::test]
async fn a_crowd_downloading_a_dictionary_reads_it_from_redis_once_and_is_limited_per_address() {
    let app = TestApp::start_private_with(|c| {
        c.limits.public_reads = 1;
        c.limits.public_reads_burst = 80;
    })
    .await;
    app.project("p", &[]).await;
    let samples: Vec<Vec<u8>> = (0..2000).map(sample).collect();
    let dict = zstd::dict::from_samples(&samples, 64 * 1024).expect("train");
    let file = app.dir.join("dict");
    std::fs::write(&file, &dict).unwrap();
    let run = app.cli(&["dictionary", "set", "p", file.to_str().unwrap()], b"");
    assert!(run.ok, "{} {}", run.out, run.err);
    let (_, meta) = json(&app, "/dictionary?project=p").await;
    let url = meta["url"].as_str().unwrap().to_string();

    let before = redis_sent(&app).await;
    let crowd = (0..64).map(|_| {
        let (http, url) = (app.http.clone(), url.clone());
        async move {
            let r = http.get(&url).send().await.unwrap();
            (r.status().as_u16(), r.bytes().await.unwrap().len())
        }
    });
    for (status, len) in futures::future::join_all(crowd).await {
        assert_eq!((status, len), (200, dict.len()));
    }
    let sent = redis_sent(&app).await - before;
    assert!(
        sent < 3 * dict.len() as u64,
        "64 downloads of {} bytes made Redis send {sent} bytes",
        dict.len()
    );

    // Past the burst, one address waits.
    let mut limited = false;
    for _ in 0..40 {
        let r = app.http.get(&url).send().await.unwrap();
        if r.status() == 429 {
            assert!(r.headers().contains_key("retry-after"));
            limited = true;
            break;
        }
        assert_eq!(r.status(), 200);
    }
    assert!(limited, "the address is limited past its burst");
}

/// The panel uploads a dictionary as the CLI sets one: checked, served under a new id, audited;
/// what is not a dictionary, too large, or sent by a read-only account changes nothing.
#[tokio::test]
async fn the_panel_uploads_a_dictionary_and_refuses_what_is_not_one() {
    use server::store::Role;
    use tests::panel::{account, json as reply_json, last_audit, Panel};
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "ro", Role::ReadOnly, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    assert_eq!(p.get("/admin/api/p/dictionary").await.body.trim(), "null");
    let samples: Vec<Vec<u8>> = (0..300).map(sample).collect();
    let dict = zstd::dict::from_samples(&samples, 16384).unwrap();
    let r = p
        .send_bytes(
            reqwest::Method::PUT,
            "/admin/api/p/dictionary",
            dict.clone(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let info = reply_json(&r);
    assert_eq!(info["id"], 1_000_000_001u64);
    assert_eq!(info["bytes"], dict.len());
    let (_, meta) = json(&app, "/dictionary?project=p").await;
    assert_eq!(meta["id"], "1000000001");
    assert_eq!(meta["sha256"], info["sha256"]);
    assert_eq!(fetch_checked(&app, &meta).await, dict);
    assert_eq!(reply_json(&p.get("/admin/api/p/dictionary").await), info);
    let audit = last_audit(&mut p, "dictionary.set").await;
    assert!(
        audit["detail"]
            .as_str()
            .unwrap()
            .starts_with("id 1000000001 "),
        "{audit}"
    );

    for (body, status, says) in [
        (
            b"not a dictionary at all".to_vec(),
            400,
            "Not a zstd dictionary",
        ),
        (vec![0u8; 17 << 20], 413, ""),
    ] {
        let r = p
            .send_bytes(reqwest::Method::PUT, "/admin/api/p/dictionary", body)
            .await;
        assert_eq!(r.status, status, "{}", r.body);
        assert!(r.body.contains(says), "{}", r.body);
    }
    let mut ro = Panel::logged_in(&app, "ro").await;
    let r = ro
        .send_bytes(
            reqwest::Method::PUT,
            "/admin/api/p/dictionary",
            dict.clone(),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    let (_, now) = json(&app, "/dictionary?project=p").await;
    assert_eq!(now, meta, "nothing changed");
    assert_eq!(
        p.get("/admin/api/nope/dictionary").await.status,
        404,
        "an unknown project"
    );
}
