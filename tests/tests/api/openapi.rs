//! `GET /openapi.json` and Swagger UI at `/admin/api/docs`: the document describes the warrior
//! API as seesaw and the grab scripts call it, covers the admin API, and every operation it
//! lists is routed (no call to a documented path meets the router's not-found page or a 405).

use serde_json::Value;
use tests::TestApp;

/// Every (method, path) the document lists.
fn operations(doc: &Value) -> Vec<(String, String)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in ["get", "post", "put", "delete", "patch"] {
            if item.get(method).is_some() {
                ops.push((method.to_string(), path.clone()));
            }
        }
    }
    ops
}

/// `path` with its parameters filled in: the project `p`, `multi=2`, anything else `x`.
fn concrete(path: &str) -> String {
    path.replace("{slug}", "p")
        .replace("{multi}", "multi=2")
        .replace("{item}", "a.json")
        .replace("{key}", "p-nokey")
        .split('/')
        .map(|seg| {
            if seg.starts_with('{') && seg.ends_with('}') {
                "x"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn the_document_lists_the_warrior_and_admin_apis_and_each_operation_is_routed() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    let r = app.get("/openapi.json").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let doc: Value = serde_json::from_str(&r.body).expect("JSON");
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let ops = operations(&doc);
    let has = |method: &str, path: &str| ops.iter().any(|(m, p)| m == method && p == path);

    // The warrior API, at the exact paths the real clients call.
    for (method, path) in [
        ("post", "/{slug}/request"),
        ("post", "/{slug}/{multi}//request"),
        ("post", "/{slug}/done"),
        ("post", "/{slug}/done+request"),
        ("post", "/{slug}/release"),
        ("post", "/{slug}/upload"),
        ("post", "/{slug}/uploaded"),
        ("get", "/{slug}/items/{item}"),
        ("post", "/backfeed/legacy/{key}"),
        ("post", "/api/register.json"),
        ("post", "/api/update.json"),
        ("get", "/projects.json"),
        ("get", "/{slug}/stats.json"),
        ("get", "/metrics"),
    ] {
        assert!(has(method, path), "{method} {path} is not described");
    }
    // Each parameter a path names is declared by its operations (a schema-driven client
    // builds the URL from them).
    for (method, path) in &ops {
        let declared: Vec<&str> = doc["paths"][path][method]["parameters"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter(|p| p["in"] == "path")
                    .filter_map(|p| p["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        for part in path.split('/') {
            if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                assert!(
                    declared.contains(&name),
                    "{method} {path}: path parameter {name} not declared ({declared:?})"
                );
            }
        }
    }
    let claim = &doc["paths"]["/{slug}/request"]["post"];
    assert_eq!(claim["tags"][0], "warrior");
    let codes: Vec<&str> = claim["responses"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for code in ["200", "400", "403", "404", "429", "455"] {
        assert!(codes.contains(&code), "claim answers {code}: {codes:?}");
    }
    let slug = &claim["parameters"][0];
    assert_eq!(
        (&slug["name"], &slug["in"], &slug["required"]),
        (&"slug".into(), &"path".into(), &true.into()),
        "{slug}"
    );
    assert!(
        slug["description"].as_str().unwrap().contains("slug"),
        "{slug}"
    );
    // Bodies come from the code's types.
    let body = &claim["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(body["$ref"], "#/components/schemas/RequestBody", "{body}");
    let fields = &doc["components"]["schemas"]["RequestBody"]["properties"];
    assert!(fields.get("downloader").is_some(), "{fields}");
    let done = &doc["components"]["schemas"]["DoneBody"]["properties"];
    for field in ["downloader", "item", "bytes", "id"] {
        assert!(done.get(field).is_some(), "done body lacks {field}: {done}");
    }
    // The schemas state the limits the handlers enforce, so that a schema-driven client
    // generates what they take.
    let schema =
        |name: &str, field: &str| doc["components"]["schemas"][name]["properties"][field].clone();
    assert_eq!(
        schema("DoneBody", "downloader")["pattern"],
        "^[-_a-zA-Z0-9]{3,30}$"
    );
    assert_eq!(schema("RequestBody", "version")["maxLength"], 64);
    assert_eq!(
        schema("CreateProject", "slug")["pattern"],
        "^[a-z0-9][a-z0-9-]{0,63}$"
    );
    assert_eq!(schema("NewToken", "days")["maximum"], 365);
    assert_eq!(schema("PasswordChange", "new")["minLength"], 10);
    assert_eq!(schema("BlockChange", "kind")["pattern"], "^(ip|dl)$");
    assert_eq!(schema("Settings", "segment_items")["minimum"], 1000);
    assert_eq!(
        schema("Settings", "done_policy")["pattern"],
        "^(keep|offload|discard)$"
    );
    for (name, field) in [
        ("MoveItems", "from"),
        ("MoveItems", "to"),
        ("ClearQueue", "queue"),
    ] {
        assert_eq!(
            schema(name, field)["pattern"],
            "^todo(:backfeed|:secondary|:redo)?$",
            "{name}.{field}"
        );
    }
    assert_eq!(schema("Listing", "weight")["maximum"], 1000);
    assert_eq!(schema("Listing", "marker_html")["maxLength"], 4096);
    assert_eq!(
        schema("PatternLimit", "name")["pattern"],
        "^[a-z0-9_-]{1,32}$"
    );
    let described = doc["components"]["schemas"]["Settings"]["description"].to_string();
    assert!(
        described.contains("twice"),
        "rules between settings: {described}"
    );
    // The listing's URL patterns say what the handler takes: each matches exactly the URLs
    // the check accepts (trimmed; empty: none).
    for field in ["repository", "logo"] {
        let pattern = schema("Listing", field)["pattern"]
            .as_str()
            .unwrap()
            .to_string();
        let re = regex::Regex::new(&pattern).unwrap();
        for url in [
            "https://github.com/ArchiveTeam/urls-grab",
            " https://github.com/ArchiveTeam/urls-grab ",
            "https://[::1]:8443/x.git?y#z",
            "",
            "http://example.org/logo.png",
            "https://-oops/x",
            "https://.x/y",
            "ext::sh -c touch% /tmp/x",
            "--upload-pack=touch /tmp/x",
            "file:///etc/passwd",
            "https://example.org/a b",
            "https://example.org/\"x",
            "https://example.org/\u{7}",
            "https:///nohost",
        ] {
            let trimmed = url.trim();
            let takes =
                trimmed.is_empty() || server::ops::listing::url_problem(field, trimmed).is_none();
            assert_eq!(re.is_match(url), takes, "{field} {url:?}");
        }
    }
    let settings = &doc["paths"]["/admin/api/{slug}/settings"]["put"]["requestBody"];
    assert!(
        settings.to_string().contains("ProjectSettings"),
        "{settings}"
    );

    // The admin API: every call under /admin/api, tagged.
    let admin: Vec<_> = ops
        .iter()
        .filter(|(_, p)| p.starts_with("/admin/api/"))
        .collect();
    assert!(admin.len() >= 50, "{} admin operations", admin.len());
    for (m, p) in &admin {
        assert_eq!(doc["paths"][p][m]["tags"][0], "admin", "{m} {p}");
    }
    // How each call is authorised: the session with its CSRF token, or an API token; logging
    // in needs neither.
    let add = doc["paths"]["/admin/api/{slug}/items"]["post"]["security"].to_string();
    assert!(
        add.contains("session") && add.contains("csrf") && add.contains("token"),
        "{add}"
    );
    assert!(doc["paths"]["/admin/api/login"]["post"]
        .get("security")
        .is_none());
    assert!(doc["components"]["securitySchemes"]["token"]["scheme"] == "bearer");
    for (method, path) in [
        ("post", "/admin/api/login"),
        ("post", "/admin/api/{slug}/items"),
        ("get", "/admin/api/{slug}/search"),
        ("post", "/admin/api/{slug}/search/act"),
        ("delete", "/admin/api/{slug}"),
    ] {
        assert!(has(method, path), "{method} {path} is not described");
    }

    // Every documented operation is routed: called without a body or a session, it answers
    // from its handler or its guards (401, 403, 400, 404 with a reason...), never with the
    // router's not-found page or 405.
    for (method, path) in &ops {
        let url = app.url(&concrete(path));
        let req = match method.as_str() {
            "get" => app.http.get(&url),
            "post" => app.http.post(&url),
            "put" => app.http.put(&url),
            "delete" => app.http.delete(&url),
            _ => app.http.patch(&url),
        };
        // Streams (the live feed) answer their headers first: the status is enough.
        let resp = req
            .header("origin", app.url(""))
            .send()
            .await
            .expect("request");
        let status = resp.status().as_u16();
        let html = resp
            .headers()
            .get("content-type")
            .is_some_and(|t| t.to_str().unwrap_or("").starts_with("text/html"));
        assert_ne!(status, 405, "{method} {path} is not routed for {method}");
        assert!(
            !(status == 404 && html),
            "{method} {path} ({url}) met the not-found page"
        );
    }
    // A call that is not routed does meet them: the checks above can fail.
    let r = app.get("/p/request").await;
    assert_eq!(r.status, 405, "{}", r.body);
    // An unknown call under a project is a plain 404 with the reason (the field suite's
    // `an_unknown_path_under_a_project_is_a_plain_404_with_a_reason`); an unknown page of the
    // site meets the not-found page, which the check above tells apart.
    let r = app.post("/p/no-such-call", "{}").await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.body.starts_with("No such call"), "{}", r.body);
    let r = app.get("/admin/no-such/page/x").await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
}

#[tokio::test]
async fn swagger_ui_is_served_at_the_admin_api_docs() {
    let app = TestApp::start().await;
    let r = app.get("/admin/api/docs/").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("swagger-ui"), "{}", r.body);
    // Its policy lets Swagger UI style its elements inline; scripts stay its own files.
    let policy = r.headers["content-security-policy"].to_str().unwrap();
    assert!(
        policy.contains("style-src 'self' 'unsafe-inline'"),
        "{policy}"
    );
    assert!(
        policy.contains("script-src 'self' 'wasm-unsafe-eval';"),
        "{policy}"
    );
    let r = app.get("/admin").await;
    let policy = r.headers["content-security-policy"].to_str().unwrap();
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    let r = app.get("/admin/api/docs/swagger-initializer.js").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("/openapi.json"), "{}", r.body);
    let r = app.get("/admin/api/docs/swagger-ui-bundle.js").await;
    assert_eq!(r.status, 200);
    assert!(r.body.len() > 100_000, "{} bytes", r.body.len());
}
