//! megawarc packing the grab scripts' WARCs (ArchiveTeam/megawarc `megawarc` at
//! 8564db93be72e68317a170177b9e64aa2a368c25): it reads the project and the dictionary id from
//! each file's name (`\.([0-9a-zA-Z-]+)\.([0-9]{10})\.warc\.zst$`, ten digits), asks
//! `GET /dictionary?project=P&id=ID`, retries forever on anything but a 200 with JSON, and fails
//! unless the answer's `id` equals the name's, as a string; then it downloads `url` and checks
//! its SHA-256. The grab scripts name the file after the `id` they were given
//! (ArchiveTeam/urls-grab `pipeline.py` at 343d732bc3fedb1361342c053dd1ed746dd1f6dd).

use sha2::{Digest, Sha256};
use tests::TestApp;

/// A trained zstd dictionary (what `tracker dictionary train` makes).
fn dictionary(seed: usize) -> Vec<u8> {
    let samples: Vec<Vec<u8>> = (0..300)
        .map(|i| {
            format!(
                "<html><head><title>page {i} of site {seed}</title></head><body>{}</body></html>",
                "word of the site ".repeat(1 + (i * 7 + seed) % 13)
            )
            .into_bytes()
        })
        .collect();
    zstd::dict::from_samples(&samples, 4096).expect("train")
}

/// megawarc's reading of a WARC's name: (project, dictionary id).
fn megawarc_name(name: &str) -> Option<(String, String)> {
    let stem = name.strip_suffix(".warc.zst")?;
    let (rest, id) = stem.rsplit_once('.')?;
    let (_, project) = rest.rsplit_once('.')?;
    let project_ok = !project.is_empty()
        && project
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    (id.len() == 10 && id.bytes().all(|b| b.is_ascii_digit()) && project_ok)
        .then(|| (project.to_string(), id.to_string()))
}

#[tokio::test]
async fn megawarc_gets_the_dictionary_a_warc_names_by_its_id() {
    let app = TestApp::start().await;
    app.project("urls", &[]).await;
    let first = dictionary(1);
    let second = dictionary(2);
    let a = app
        .store
        .projects()
        .set_dictionary("urls", &first)
        .await
        .unwrap();
    app.store
        .projects()
        .set_dictionary("urls", &second)
        .await
        .unwrap();

    // The grab script was given the first one's id, and named its WARC after it.
    let grab: serde_json::Value =
        serde_json::from_str(&app.get("/dictionary?project=urls").await.body).unwrap();
    let current_id = grab["id"].as_str().expect("the id as a string");
    let warc = format!("urls_20260328000000_abcdef.urls.{}.warc.zst", a.id);
    let (project, id) = megawarc_name(&warc).expect("a name megawarc reads");
    assert_ne!(
        id, current_id,
        "an older dictionary than the one served now"
    );

    let r = app
        .get(&format!("/dictionary?project={project}&id={id}"))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let meta: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        meta["id"],
        serde_json::Value::String(id.clone()),
        "megawarc: r['id'] != dict_id"
    );
    let raw = app
        .http
        .get(meta["url"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let sha: String = Sha256::digest(&raw)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(sha, meta["sha256"]);
    assert_eq!(
        raw.to_vec(),
        first,
        "the dictionary the WARC was compressed with"
    );
}

#[tokio::test]
async fn an_id_not_kept_is_404_and_a_malformed_one_400() {
    let app = TestApp::start().await;
    app.project("urls", &[]).await;
    app.store
        .projects()
        .set_dictionary("urls", &dictionary(1))
        .await
        .unwrap();
    for _ in 0..server::store::dictionary::KEPT {
        app.store
            .projects()
            .set_dictionary("urls", &dictionary(2))
            .await
            .unwrap();
    }
    let first = server::store::dictionary::ID_BASE + 1;
    let r = app
        .get(&format!("/dictionary?project=urls&id={first}"))
        .await;
    assert_eq!(r.status, 404, "no longer kept: {}", r.body);
    assert!(r.body.contains("kept"), "{}", r.body);
    for bad in ["abc", "-1", "1e9", "99999999999999999999999"] {
        let r = app.get(&format!("/dictionary?project=urls&id={bad}")).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    let r = app.get("/dictionary?project=nope&id=1000000001").await;
    assert_eq!(r.status, 404);
}
