//! A property test over the warrior endpoints: random paths, headers and bodies (well-formed
//! calls with hostile values, and garbage) never get a 5xx other than the declared 503s, and the
//! project's invariant holds afterwards. `PROPTEST_CASES` sets how many calls (default 300;
//! `bench/README.md` has the long run).

use proptest::{collection, prelude::*, test_runner::TestRunner};
use serde_json::Value;
use std::sync::Arc;
use tests::TestApp;

/// Names the project knows, so that some calls touch real items.
const ITEMS: [&str; 10] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9_-]{0,40}",
        2 => Just(String::new()),
        2 => "\\PC{0,80}",
        1 => "[\\x00-\\x7f]{0,80}",
        1 => (0usize..70_000).prop_map(|n| "x".repeat(n)),
        2 => proptest::sample::select(&ITEMS[..]).prop_map(String::from),
        1 => collection::vec(proptest::sample::select(&ITEMS[..]), 1..6).prop_map(|v| v.join("\0")),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u64..=1 << 50).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        Just(serde_json::json!(1e300)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number(),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            collection::btree_map("[a-z]{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A warrior call's body: the fields warriors send, each with a hostile value or left out.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let field = |name: &'static str, v: BoxedStrategy<Value>| {
        proptest::option::weighted(0.8, v).prop_map(move |v| v.map(|v| (name.to_string(), v)))
    };
    let bytes = prop_oneof![
        collection::btree_map("[a-z]{0,6}", number(), 0..20)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        number().prop_map(|n| serde_json::json!({ "data": n })),
        value(),
    ];
    let structured = (
        field("downloader", text().prop_map(Value::from).boxed()),
        field("item", text().prop_map(Value::from).boxed()),
        field("bytes", bytes.boxed()),
        field("version", value().boxed()),
        field("id", value().boxed()),
        field("api_version", value().boxed()),
    )
        .prop_map(|fields| {
            let (a, b, c, d, e, f) = fields;
            let obj: serde_json::Map<String, Value> =
                [a, b, c, d, e, f].into_iter().flatten().collect();
            Value::Object(obj).to_string().into_bytes()
        });
    prop_oneof![
        6 => structured,
        1 => collection::vec(any::<u8>(), 0..512),
        1 => value().prop_map(|v| v.to_string().into_bytes()),
    ]
}

fn path() -> impl Strategy<Value = String> {
    let seg = "[a-zA-Z0-9=+%._-]{0,12}";
    prop_oneof![
        Just("/p/request".to_string()),
        any::<u32>().prop_map(|n| format!("/p/multi={}//request", n % 2000)),
        seg.prop_map(|s| format!("/p/{s}//request")),
        Just("/p/done".to_string()),
        Just("/p/done+request".to_string()),
        Just("/p/release".to_string()),
        Just("/p/upload".to_string()),
        Just("/p/uploaded".to_string()),
        Just("/p/rescue-me".to_string()),
        seg.prop_map(|s| format!("/p/items/{s}.json")),
        seg.prop_map(|s| format!("/{s}/request")),
        seg.prop_map(|s| format!("/{s}/done")),
        seg.prop_map(|s| format!("/backfeed/legacy/{s}")),
        Just("/now".to_string()),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = proptest::sample::select(vec![
        "user-agent",
        "content-type",
        "content-encoding",
        "x-forwarded-for",
        "authorization",
        "accept-encoding",
        "x-anything",
    ]);
    collection::vec((name.prop_map(String::from), "[ -~]{0,300}"), 0..4)
}

#[test]
fn random_warrior_calls_never_get_a_5xx_and_keep_the_invariant() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let app = Arc::new(rt.block_on(async {
        let app = TestApp::start().await;
        app.project("p", &ITEMS).await;
        app
    }));
    let http = reqwest::Client::new();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        prop_oneof![Just(reqwest::Method::POST), Just(reqwest::Method::GET)],
        path(),
        headers(),
        body(),
    );
    runner
        .run(&strategy, |(method, path, headers, body)| {
            let (app, http, url) = (app.clone(), http.clone(), app.url(&path));
            let status = rt.block_on(async move {
                let send = |http: &reqwest::Client| {
                    let mut req = http.request(method.clone(), &url).body(body.clone());
                    for (k, v) in &headers {
                        req = req.header(k, v);
                    }
                    req.send()
                };
                let seen = |r: reqwest::Response| {
                    (r.status().as_u16(), r.headers().contains_key("retry-after"))
                };
                match send(&http).await {
                    Ok(r) => Ok(seen(r)),
                    // A kept-alive connection the server closed as idle just as the request
                    // went out (a race of any HTTP/1.1 client): once more on a new connection,
                    // which fails again if the server really dropped the request.
                    Err(e) if e.is_request() => {
                        let fresh = reqwest::Client::builder()
                            .pool_max_idle_per_host(0)
                            .build()
                            .expect("a client");
                        send(&fresh).await.map(seen)
                    }
                    Err(e) => Err(e),
                }
            });
            let (status, retry_after) =
                status.map_err(|e| TestCaseError::fail(format!("{path}: {e}")))?;
            drop(app);
            // The only 5xx the tracker declares is a 503 that says when to come back.
            prop_assert!(
                status < 500 || (status == 503 && retry_after),
                "{} answered {} (Retry-After: {})",
                path,
                status,
                retry_after
            );
            Ok(())
        })
        .unwrap();
    rt.block_on(app.assert_invariant("p"));
}
