//! The completion log as the proof reads it: the archive files' entries, then Redis's.

use server::store::offload::offloader::archive::Archives;
use server::store::Store;
use std::collections::HashMap;

/// One completion log entry: its id, downloader, items and bytes per domain.
pub(super) struct Entry {
    pub(super) id: String,
    pub(super) who: String,
    pub(super) items: Vec<String>,
    pub(super) bytes: HashMap<String, u64>,
}

fn entry_of(id: String, fields: &serde_json::Map<String, serde_json::Value>) -> Entry {
    let text = |k: &str| fields.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    // The archive holds `items` and `bytes` as JSON values; Redis as JSON text.
    let json = |k: &str| match fields.get(k) {
        Some(serde_json::Value::String(s)) => serde_json::from_str(s).unwrap_or_default(),
        Some(v) => v.clone(),
        None => serde_json::Value::Null,
    };
    let items = json("items")
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| i.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let bytes = json("bytes")
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(d, b)| (d.clone(), b.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    Entry {
        id,
        who: text("d").to_string(),
        items,
        bytes,
    }
}

/// Every completion log entry of `slug`: the archives' (files or objects), then Redis's.
pub(super) async fn log_entries(
    store: &Store,
    slug: &str,
    archives: Option<&Archives>,
) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    if let Some(archives) = archives.cloned() {
        // The storage's calls block: read off the async threads.
        let texts =
            tokio::task::spawn_blocking(move || -> std::io::Result<Vec<(String, String)>> {
                use std::io::Read;
                let mut files = archives.files()?;
                files.sort_by(|a, b| a.name.cmp(&b.name));
                let mut texts = Vec::new();
                for f in files {
                    let mut text = String::new();
                    flate2::read::GzDecoder::new(archives.open(&f.name)?)
                        .read_to_string(&mut text)?;
                    texts.push((f.name, text));
                }
                Ok(texts)
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("reading the log archives: {e}"))?;
        for (name, text) in texts {
            for line in text.lines() {
                let v: serde_json::Value =
                    serde_json::from_str(line).map_err(|e| format!("{name}: {e}"))?;
                let obj = v.as_object().cloned().unwrap_or_default();
                let id = obj
                    .get("log_id")
                    .and_then(|i| i.as_str())
                    .unwrap_or_default()
                    .to_string();
                out.push(entry_of(id, &obj));
            }
        }
    }
    let mut start = "-".to_string();
    loop {
        let page = store
            .fleet()
            .log_page(slug, &start, "+", 1000)
            .await
            .map_err(|e| e.to_string())?;
        let full = page.len() == 1000;
        for (id, fields) in page {
            start = format!("({id}");
            let obj: serde_json::Map<String, serde_json::Value> = fields
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect();
            out.push(entry_of(id, &obj));
        }
        if !full {
            break;
        }
    }
    Ok(out)
}
