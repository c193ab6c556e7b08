//! The OpenAPI document driving a schema-based fuzzer against a running tracker: for every
//! operation it lists, calls built from the document (path and query parameters, and bodies
//! generated from the request schema: valid ones, ones that break it, and garbage), sent as a
//! logged-in global admin with the session's CSRF token. Every call is answered without a 5xx
//! (but the 503s of a busy tracker, with `Retry-After`), and a refused call (4xx) changes
//! nothing: the keys in Redis and the project's counts are as before it. `SCHEMA_FUZZ_CASES`
//! sets the calls per operation (default 6), `SCHEMA_FUZZ_SEED` replays a run.

use rand::{rngs::StdRng, Rng, SeedableRng};
use serde_json::{json, Map, Value};
use server::store::Role;
use std::collections::BTreeSet;
use tests::panel::{account, Panel};
use tests::TestApp;

/// Operations left out, and why: the live feed is a stream that does not end (its frames are
/// fuzzed in `live_frames.rs` and `websocket.rs`); the others end the session the fuzzer calls
/// with (log out, a new password) or remove the account or project the other calls need. Their
/// refusals are tested where they are described.
const SKIPPED: [(&str, &str); 5] = [
    ("get", "/{slug}/live"),
    ("post", "/admin/api/logout"),
    ("post", "/admin/api/password"),
    ("delete", "/admin/api/users/{name}"),
    ("delete", "/admin/api/{slug}"),
];

/// Resolves a `$ref` to its schema.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap_or_default();
            resolve(doc, &doc["components"]["schemas"][name])
        }
        None => schema,
    }
}

/// A string an attacker or a broken client would send.
fn hostile_text(rng: &mut StdRng) -> String {
    let pick = [
        "",
        " ",
        "p",
        "bob",
        "../../etc/passwd",
        "<script>alert(1)</script>",
        "--upload-pack=touch /tmp/x",
        "javascript:alert(1)",
        "\u{0}\u{7f}\u{feff}",
        "ℌ𝔢𝔩𝔩𝔬 \u{202e}",
        "%00%2e%2e/",
        "9999999999999999999999",
        "-1",
        "null",
        "a,b,c",
        "*",
        "[a-",
        "(a+)+$",
    ];
    match rng.random_range(0..10) {
        0 => "x".repeat(rng.random_range(1000..70_000)),
        1 => (0..rng.random_range(0..40))
            .map(|_| char::from_u32(rng.random_range(0..0x2FFFF)).unwrap_or('?'))
            .collect(),
        _ => pick[rng.random_range(0..pick.len())].to_string(),
    }
}

/// A value of `schema` (mostly valid), or one that breaks it when `wild`.
fn generate(doc: &Value, schema: &Value, rng: &mut StdRng, depth: u32, wild: bool) -> Value {
    let schema = resolve(doc, schema);
    if depth > 6 {
        return Value::Null;
    }
    if wild && rng.random_bool(0.3) {
        return garbage(rng, depth);
    }
    for any in ["oneOf", "anyOf"] {
        if let Some(list) = schema.get(any).and_then(Value::as_array) {
            if !list.is_empty() {
                let pick = &list[rng.random_range(0..list.len())];
                return generate(doc, pick, rng, depth + 1, wild);
            }
        }
    }
    if let Some(list) = schema.get("allOf").and_then(Value::as_array) {
        let mut out = Map::new();
        for part in list {
            if let Value::Object(o) = generate(doc, part, rng, depth + 1, wild) {
                out.extend(o);
            }
        }
        return Value::Object(out);
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let break_it = wild && rng.random_bool(0.2);
        if !values.is_empty() && !break_it {
            return values[rng.random_range(0..values.len())].clone();
        }
    }
    let kind = match &schema["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_string(),
        _ if schema.get("properties").is_some() => "object".into(),
        _ => return garbage(rng, depth),
    };
    match kind.as_str() {
        "object" => {
            let mut out = Map::new();
            let required: BTreeSet<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = schema["properties"].as_object() {
                for (name, prop) in props {
                    let keep = required.contains(name.as_str()) || rng.random_bool(0.6);
                    // A wild body sometimes leaves out what is required.
                    if keep && !(wild && rng.random_bool(0.1)) {
                        out.insert(name.clone(), generate(doc, prop, rng, depth + 1, wild));
                    }
                }
            }
            if wild && rng.random_bool(0.2) {
                out.insert(hostile_text(rng), garbage(rng, depth + 1));
            }
            Value::Object(out)
        }
        "array" => {
            let n = if wild && rng.random_bool(0.1) {
                rng.random_range(100..3000)
            } else {
                rng.random_range(0..4)
            };
            Value::Array(
                (0..n)
                    .map(|_| generate(doc, &schema["items"], rng, depth + 1, wild))
                    .collect(),
            )
        }
        "integer" => match rng.random_range(0..8) {
            0 if wild => json!(-1),
            1 if wild => json!(u64::MAX),
            2 if wild => json!(1.5),
            _ => json!(rng.random_range(0..200)),
        },
        "number" => json!(rng.random_range(-10.0..1000.0)),
        "boolean" => json!(rng.random_bool(0.5)),
        "string" => {
            if !wild && rng.random_bool(0.5) {
                json!(
                    ["p", "a", "alice", "todo", "1", "https://example.org/x"]
                        [rng.random_range(0..6)]
                )
            } else {
                json!(hostile_text(rng))
            }
        }
        _ => Value::Null,
    }
}

/// Any JSON at all.
fn garbage(rng: &mut StdRng, depth: u32) -> Value {
    match rng.random_range(0..7) {
        0 => Value::Null,
        1 => json!(rng.random_bool(0.5)),
        2 => json!(rng.random_range(-1_000_000i64..1_000_000)),
        3 => json!(hostile_text(rng)),
        4 if depth < 4 => Value::Array((0..3).map(|_| garbage(rng, depth + 1)).collect()),
        5 if depth < 4 => {
            let mut m = Map::new();
            m.insert(hostile_text(rng), garbage(rng, depth + 1));
            Value::Object(m)
        }
        _ => json!(1e300),
    }
}

/// A value for parameter `name` of schema `schema`.
fn parameter(doc: &Value, name: &str, schema: &Value, rng: &mut StdRng) -> String {
    if rng.random_bool(0.6) {
        let known = match name {
            "slug" => "p",
            "item" => "a",
            "name" => "bob",
            "queue" => "todo",
            "multi" => "multi=2",
            "key" => "p-nokey",
            _ => "",
        };
        if !known.is_empty() {
            return known.to_string();
        }
    }
    let wild = rng.random_bool(0.4);
    let value = match generate(doc, schema, rng, 0, wild) {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    };
    // A URL stays within what an HTTP client sends (the server's own limits are tested with
    // long ones where they are described).
    value.chars().take(1000).collect()
}

/// Percent-encodes `s` for a path segment or a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// What a refused call must leave as it was: the key names (but those of counters that a
/// refusal may keep: rate limits, login attempts, sessions) and the project's counts.
async fn state(app: &TestApp) -> (Vec<String>, String) {
    use fred::prelude::*;
    let mut keys: Vec<String> = app
        .store
        .client()
        .custom(fred::cmd!("KEYS"), vec!["*"])
        .await
        .unwrap();
    keys.retain(|k| {
        ![
            ":admin:fail:",
            "tower-sessions",
            ":rate",
            ":gcra",
            ":throttle",
            ":seen",
            ":fleet",
            ":hq:",
            ":metrics",
            ":viewers",
            ":rescue:",
            ":st:",
            // Written by the background loops (the lifecycle watcher, the tally of figures), every
            // few seconds, whatever the calls.
            ":lifecycle",
            ":status",
            ":tally",
        ]
        .iter()
        .any(|part| k.contains(part))
    });
    keys.sort();
    let counts = format!("{:?}", app.counts("p").await);
    (keys, counts)
}

#[tokio::test]
async fn every_documented_operation_survives_generated_calls_and_refusals_change_nothing() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c"]).await;
    account(&app, "bob", Role::Project, &["p"]).await;
    // The fuzzer's own account; when a generated call ends its session (or its account), a
    // fresh one takes over.
    let mut fuzzers = 0;
    let mut next_panel = || {
        fuzzers += 1;
        format!("fuzzer{fuzzers}")
    };
    let name = next_panel();
    account(&app, &name, Role::Global, &[]).await;
    let mut panel = Panel::logged_in(&app, &name).await;
    let doc: Value = serde_json::from_str(&app.get("/openapi.json").await.body).unwrap();
    let cases: usize = std::env::var("SCHEMA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let seed: u64 = std::env::var("SCHEMA_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut calls = 0;
    let mut refused = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "post", "put", "delete", "patch"] {
            let Some(op) = item.get(method) else {
                continue;
            };
            if SKIPPED.contains(&(method, path.as_str())) {
                continue;
            }
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            let body_schema = op["requestBody"]["content"]
                .as_object()
                .and_then(|c| c.values().next())
                .map(|c| c["schema"].clone());
            for _ in 0..cases {
                let mut url = path.clone();
                let mut query = Vec::new();
                for p in &params {
                    let name = p["name"].as_str().unwrap_or_default();
                    let value = parameter(&doc, name, &p["schema"], &mut rng);
                    match p["in"].as_str() {
                        Some("path") => {
                            let value = if name == "multi" {
                                value
                            } else {
                                encode(&value)
                            };
                            url = url.replace(&format!("{{{name}}}"), &value);
                        }
                        Some("query") if rng.random_bool(0.7) => {
                            query.push(format!("{name}={}", encode(&value)))
                        }
                        _ => {}
                    }
                }
                if !query.is_empty() {
                    url = format!("{url}?{}", query.join("&"));
                }
                let wild = rng.random_bool(0.5);
                let body = match &body_schema {
                    Some(s) if !(wild && rng.random_bool(0.1)) => {
                        generate(&doc, s, &mut rng, 0, wild).to_string()
                    }
                    Some(_) => hostile_text(&mut rng),
                    None => String::new(),
                };
                let before = state(&app).await;
                let method_ =
                    reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                let what = format!(
                    "{method} {} {} (seed {seed})",
                    url.chars().take(300).collect::<String>(),
                    body.chars().take(300).collect::<String>()
                );
                let call = async {
                    if method == "get" {
                        panel.get(&url).await
                    } else {
                        let value =
                            serde_json::from_str(&body).unwrap_or(Value::String(body.clone()));
                        panel.send(method_, &url, value).await
                    }
                };
                let r = tokio::time::timeout(std::time::Duration::from_secs(30), call)
                    .await
                    .unwrap_or_else(|_| panic!("{what}: no answer in 30 s"));
                calls += 1;
                assert!(
                    r.status < 500 || (r.status == 503 && r.headers.contains_key("retry-after")),
                    "{what}: {} {}",
                    r.status,
                    r.body.chars().take(500).collect::<String>()
                );
                if (400..500).contains(&r.status) && r.status != 429 {
                    refused += 1;
                    let after = state(&app).await;
                    if after != before {
                        let added: Vec<&String> =
                            after.0.iter().filter(|k| !before.0.contains(k)).collect();
                        let gone: Vec<&String> =
                            before.0.iter().filter(|k| !after.0.contains(k)).collect();
                        panic!(
                            "{what}: refused ({} {}) but changed: keys added {added:?}, gone {gone:?}, counts {} -> {}",
                            r.status,
                            r.body.chars().take(300).collect::<String>(),
                            before.1,
                            after.1
                        );
                    }
                }
                // The session must still be there for the next calls.
                if r.status == 401 {
                    let user =
                        tests::panel::json(&panel.get("/admin/api/session").await)["user"].clone();
                    if user.is_null() {
                        let name = next_panel();
                        account(&app, &name, Role::Global, &[]).await;
                        panel = Panel::logged_in(&app, &name).await;
                    }
                }
            }
        }
    }
    assert!(calls > 300, "{calls} calls");
    assert!(
        refused > 50,
        "{refused} refusals: the bodies reached the checks"
    );
    app.assert_invariant("p").await;
}
