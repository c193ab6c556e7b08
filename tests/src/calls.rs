//! A [`TestApp`]'s HTTP calls: posts and gets with their [`Reply`], and a warrior's claims and
//! dones as the protocol makes them.

use crate::{Reply, TestApp};

impl TestApp {
    /// POSTs `body` to `path` with `headers`.
    pub async fn post_with(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<reqwest::Body>,
    ) -> Reply {
        let mut req = self.http.post(self.url(path)).body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Self::reply(req.send().await.expect("POST")).await
    }

    /// POSTs `body` to `path`.
    pub async fn post(&self, path: &str, body: impl Into<reqwest::Body>) -> Reply {
        let resp = self
            .http
            .post(self.url(path))
            .body(body)
            .send()
            .await
            .expect("POST");
        Self::reply(resp).await
    }

    /// GETs `path`.
    pub async fn get(&self, path: &str) -> Reply {
        let resp = self.http.get(self.url(path)).send().await.expect("GET");
        Self::reply(resp).await
    }

    /// Sends a request built on [`TestApp::http`].
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        Self::reply(req.send().await.expect("request")).await
    }

    async fn reply(resp: reqwest::Response) -> Reply {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.text().await.expect("body");
        Reply {
            status,
            body,
            headers,
        }
    }

    /// Issues pipeline `name` with `tags` (comma-separated) through the command line; the
    /// secret it prints once.
    pub fn pipeline_secret(&self, name: &str, tags: &str) -> String {
        let run = self.cli(&["pipeline", "create", name, "--tags", tags], b"");
        assert!(run.ok, "{}", run.err);
        run.out
            .lines()
            .find_map(|l| l.strip_prefix("secret (shown once): "))
            .expect("the secret is printed")
            .to_string()
    }

    /// Claims one item for `downloader` (api_version 2); the item name.
    pub async fn claim(&self, slug: &str, downloader: &str) -> String {
        let r = self
            .post(
                &format!("/{slug}/request"),
                format!(r#"{{"downloader":"{downloader}","api_version":"2"}}"#),
            )
            .await;
        assert_eq!(r.status, 200, "claim failed: {}", r.body);
        let v: serde_json::Value = serde_json::from_str(&r.body).expect("claim JSON");
        v["item_name"].as_str().expect("item_name").to_string()
    }

    /// Claims up to `n` items for `who` (`multi=N`); their names, none when nothing is left.
    pub async fn claim_n(&self, slug: &str, who: &str, n: usize) -> Vec<String> {
        let r = self
            .post(
                &format!("/{slug}/multi={n}//request"),
                format!(r#"{{"downloader":"{who}","api_version":"2"}}"#),
            )
            .await;
        if r.status == 404 && r.body.contains("No item") {
            return vec![];
        }
        assert_eq!(r.status, 200, "claim failed: {}", r.body);
        let v: serde_json::Value = serde_json::from_str(&r.body).expect("claim JSON");
        let joined = v["item_name"].as_str().expect("item_name");
        joined.split('\0').map(String::from).collect()
    }

    /// Hands out every waiting item of `slug` (claims for downloader `claimer`), so that any
    /// downloader may then report them done; how many.
    pub async fn claim_all(&self, slug: &str) -> usize {
        let mut n = 0;
        loop {
            match self.claim_n(slug, "claimer", 1000).await.len() {
                0 => return n,
                k => n += k,
            }
        }
    }

    /// Reports `item` done by `downloader` with `bytes` in domain `data`.
    pub async fn done(&self, slug: &str, downloader: &str, item: &str, bytes: u64) -> Reply {
        let body = serde_json::json!({"downloader": downloader, "item": item, "bytes": {"data": bytes}, "version": "20240101.01"});
        self.post(&format!("/{slug}/done"), body.to_string()).await
    }
}
