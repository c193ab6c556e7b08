//! What one backfeed call may hold: compression bombs refused fast, the decompressed size and
//! the records per call capped.

use super::*;

/// `total` bytes of `pattern` over and over, gzipped as they are written, so the test never
/// holds them.
fn gzip_bomb(pattern: &[u8], total: usize) -> Vec<u8> {
    let chunk = pattern.repeat((1 << 20) / pattern.len());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut written = 0;
    while written < total {
        gz.write_all(&chunk).unwrap();
        written += chunk.len();
    }
    gz.finish().unwrap()
}

/// One zstd frame of `byte` repeated `blocks` x 128 KiB: raw RLE blocks of 4 bytes each, made
/// by hand (RFC 8878: magic, a descriptor with no options, a 128 KiB window, block headers).
fn zstd_bomb(byte: u8, blocks: usize) -> Vec<u8> {
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
    for i in 0..blocks {
        let header = u32::from(i + 1 == blocks) | (1 << 1) | ((128 * 1024) << 3);
        frame.extend_from_slice(&header.to_le_bytes()[..3]);
        frame.push(byte);
    }
    frame
}

/// Posts `body` with `encoding`; the reply and how long the server took.
async fn post_encoded(app: &TestApp, encoding: &str, body: Vec<u8>) -> (tests::Reply, Duration) {
    let started = Instant::now();
    let r = app
        .post_with(
            "/backfeed/legacy/p-s3cret?delimiter=%00",
            &[("content-encoding", encoding)],
            body,
        )
        .await;
    (r, started.elapsed())
}

/// A GiB of records compressed to about a MiB (gzip), and a GiB in 32 KiB (zstd RLE blocks):
/// each is refused with 413 by the ratio cap after a few MiB of output, fast, and queues nothing.
#[tokio::test]
async fn compression_bombs_are_refused_fast_and_queue_nothing() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    let gzip = gzip_bomb(b"bomb-item\0", 1 << 30);
    assert!(gzip.len() < 4 << 20, "{} bytes", gzip.len());
    let zstd = zstd_bomb(b'x', 8192);
    assert_eq!(zstd.len(), 6 + 4 * 8192);
    for (encoding, bomb) in [("gzip", gzip), ("zstd", zstd)] {
        let (r, took) = post_encoded(&app, encoding, bomb).await;
        assert_eq!(r.status, 413, "{encoding}: {}", r.body);
        assert!(
            r.body.contains("more than 100 times its compressed size"),
            "{encoding}: {}",
            r.body
        );
        assert!(took < Duration::from_secs(5), "{encoding}: {took:?}");
        assert_nothing_queued(&app).await;
    }
    // The tracker is fine after: a small compressed body goes through.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"after\0").unwrap();
    let (r, _) = post_encoded(&app, "gzip", gz.finish().unwrap()).await;
    assert_eq!(reply(&r), (1, 0));
    app.assert_invariant("p").await;
}

/// With the ratio cap out of the way, the output cap alone stops a bomb: 413 as soon as the
/// output passes it, and nothing queued; a zstd frame asking for a window over 8 MiB is refused
/// before anything is decoded.
#[tokio::test]
async fn the_decompressed_size_is_capped_whatever_the_ratio() {
    let app = TestApp::start_with(|app| {
        app.limits.backfeed_ratio = 1_000_000;
        app.limits.backfeed_decoded = 4 << 20;
    })
    .await;
    with_backfeed(&app).await;
    for (encoding, bomb) in [
        ("gzip", gzip_bomb(b"bomb-item\0", 64 << 20)),
        ("zstd", zstd_bomb(b'x', 8192)),
    ] {
        let (r, took) = post_encoded(&app, encoding, bomb).await;
        assert_eq!(r.status, 413, "{encoding}: {}", r.body);
        assert!(
            r.body.contains("decompresses to more than 4194304 bytes"),
            "{encoding}: {}",
            r.body
        );
        assert!(took < Duration::from_secs(5), "{encoding}: {took:?}");
    }
    let mut wide = zstd_bomb(b'x', 1);
    wide[5] = 20 << 3; // a 1 GiB window
    let (r, _) = post_encoded(&app, "zstd", wide).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.body.contains("zstd window"), "{}", r.body);
    assert_nothing_queued(&app).await;
    app.assert_invariant("p").await;
}

/// 100,001 records are refused whole (413, nothing queued), plain or compressed; 100,000 go.
#[tokio::test]
async fn at_most_100_000_records_per_call() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    app.settings("p", |s| {
        s.backfeed_key = "s3cret".into();
        s.bloom_capacity = 200_000;
    })
    .await;
    let records = |n: usize| -> String { (0..n).map(|i| format!("rec{i}\0")).collect() };
    let r = app
        .post("/backfeed/legacy/p-s3cret?delimiter=%00", records(100_001))
        .await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.body.contains("At most 100000 records"), "{}", r.body);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(records(100_001).as_bytes()).unwrap();
    let (r, _) = post_encoded(&app, "gzip", gz.finish().unwrap()).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert_nothing_queued(&app).await;
    let r = app
        .post("/backfeed/legacy/p-s3cret?delimiter=%00", records(100_000))
        .await;
    assert_eq!(reply(&r), (100_000, 0));
    assert_eq!(app.counts("p").await.todo, 100_000);
    app.assert_invariant("p").await;
}
