//! The settings form of a project page: every setting as a labelled field, pattern limits and
//! extra item fields as small list editors, checked by the server (as `tracker project set`
//! checks them) with its reason shown; the raw JSON stays available under "Advanced".

use super::api::{self, Body};
use leptos::{prelude::*, task::spawn_local};
use serde_json::{json, Value};

/// The plain fields of the form: (settings key, label, kind).
const FIELDS: [(&str, &str, Kind); 14] = [
    ("title", "Title", Kind::Text),
    ("banner", "Banner (a message on the pages)", Kind::Text),
    ("domains", "Byte domains (comma-separated)", Kind::List),
    (
        "item_pattern",
        "Valid item pattern (regular expression; empty: rescue form closed)",
        Kind::Text,
    ),
    (
        "min_version",
        "Minimum script version (empty: any)",
        Kind::Text,
    ),
    (
        "rate",
        "Rate limit (items per second; 0: none)",
        Kind::Float,
    ),
    ("burst", "Burst (items at once)", Kind::Float),
    (
        "dl_max_claims",
        "Max claims per downloader (0: any)",
        Kind::Int,
    ),
    ("claims_limit", "Claims limit (0: none)", Kind::Int),
    ("reclaim_ttl", "Reclaim TTL (seconds; 0: never)", Kind::Int),
    ("max_attempts", "Max attempts (0: never fail)", Kind::Int),
    (
        "auto_block_ttl",
        "Automatic block length (seconds)",
        Kind::Int,
    ),
    (
        "bloom_capacity",
        "Bloom filter capacity (backfeed records)",
        Kind::Int,
    ),
    (
        "backfeed_shards",
        "Backfeed shards a call may name (comma-separated)",
        Kind::List,
    ),
];

/// How a field's text maps to JSON.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    List,
    Float,
    Int,
}

/// `v` as the text of a field of `kind`.
fn field_text(v: &Value, kind: Kind) -> String {
    match kind {
        Kind::List => v
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
        _ => v
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| v.to_string()),
    }
}

/// The JSON of `text` for a field of `kind`, or why not.
fn field_value(text: &str, kind: Kind, label: &str) -> Result<Value, String> {
    let t = text.trim();
    match kind {
        Kind::Text => Ok(t.into()),
        Kind::List => Ok(t
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .into()),
        Kind::Float => t
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Value::from)
            .ok_or(format!("{label}: not a number.")),
        Kind::Int => t
            .parse::<u64>()
            .map(Value::from)
            .map_err(|_| format!("{label}: not a whole number.")),
    }
}

/// One row of a two- or four-column list editor.
#[derive(Clone, Copy)]
struct Row {
    id: u32,
    cells: [RwSignal<String>; 4],
}

fn rows(values: Vec<[String; 4]>) -> Vec<Row> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| Row {
            id: i as u32,
            cells: v.map(RwSignal::new),
        })
        .collect()
}

/// Edits project `slug`'s settings; without `may_change`, shows them only. Only `global`
/// admins change who administers the project.
#[component]
pub fn SettingsEditor(
    slug: String,
    csrf: StoredValue<String>,
    may_change: bool,
    global: bool,
) -> impl IntoView {
    let path = StoredValue::new(format!("/admin/api/{slug}/settings"));
    let loaded = LocalResource::new(move || api::get(path.get_value()));
    let doc = RwSignal::new(Value::Null);
    let fields: Vec<RwSignal<String>> = FIELDS
        .iter()
        .map(|_| RwSignal::new(String::new()))
        .collect();
    let fields = StoredValue::new(fields);
    let (state, description, priority, admins, raw, message) = (
        RwSignal::new("active".to_string()),
        RwSignal::new(String::new()),
        RwSignal::new("0".to_string()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let (fifo, ignore_blocks) = (RwSignal::new(false), RwSignal::new(false));
    let limits: RwSignal<Vec<Row>> = RwSignal::new(vec![]);
    let extra: RwSignal<Vec<Row>> = RwSignal::new(vec![]);
    let next_id = StoredValue::new(1000u32);
    let fill = move |v: &Value| {
        let s = &v["settings"];
        for (i, (key, _, kind)) in FIELDS.iter().enumerate() {
            fields.with_value(|f| f[i].set(field_text(&s[*key], *kind)));
        }
        state.set(s["state"].as_str().unwrap_or("active").to_string());
        fifo.set(s["fifo"].as_bool().unwrap_or(false));
        ignore_blocks.set(s["ignore_global_blocks"].as_bool().unwrap_or(false));
        description.set(v["description"].as_str().unwrap_or_default().to_string());
        priority.set(v["priority"].as_i64().unwrap_or(0).to_string());
        admins.set(field_text(&v["admins"], Kind::List));
        let pl = s["pattern_limits"].as_array().cloned().unwrap_or_default();
        limits.set(rows(
            pl.iter()
                .map(|p| {
                    ["name", "pattern", "rate", "burst"].map(|k| field_text(&p[k], Kind::Text))
                })
                .collect(),
        ));
        let ex = s["extra"].as_object().cloned().unwrap_or_default();
        extra.set(rows(
            ex.iter()
                .map(|(k, v)| {
                    [
                        k.clone(),
                        field_text(v, Kind::Text),
                        String::new(),
                        String::new(),
                    ]
                })
                .collect(),
        ));
        raw.set(serde_json::to_string_pretty(v).unwrap_or_default());
        doc.set(v.clone());
    };
    Effect::new(move || {
        if let Some(Ok(v)) = loaded.get() {
            fill(&v);
        }
    });
    // The document the form describes, or the first field that is not valid.
    let build = move || -> Result<Value, String> {
        let mut v = doc.get_untracked();
        let s = &mut v["settings"];
        for (i, (key, label, kind)) in FIELDS.iter().enumerate() {
            s[*key] = field_value(&fields.with_value(|f| f[i].get_untracked()), *kind, label)?;
        }
        s["state"] = state.get_untracked().into();
        s["fifo"] = fifo.get_untracked().into();
        s["ignore_global_blocks"] = ignore_blocks.get_untracked().into();
        let mut pl = Vec::new();
        for r in limits.get_untracked() {
            let [name, pattern, rate, burst] = r.cells.map(|c| c.get_untracked());
            pl.push(json!({
                "name": name.trim(), "pattern": pattern,
                "rate": field_value(&rate, Kind::Float, "Pattern limit rate")?,
                "burst": field_value(&burst, Kind::Float, "Pattern limit burst")?,
            }));
        }
        s["pattern_limits"] = pl.into();
        let mut ex = serde_json::Map::new();
        for r in extra.get_untracked() {
            let [k, val, ..] = r.cells.map(|c| c.get_untracked());
            ex.insert(k.trim().to_string(), val.into());
        }
        s["extra"] = ex.into();
        v["description"] = description.get_untracked().into();
        v["priority"] = priority
            .get_untracked()
            .trim()
            .parse::<i64>()
            .map_err(|_| "Priority: not a whole number.".to_string())?
            .into();
        v["admins"] = field_value(&admins.get_untracked(), Kind::List, "Admins")?;
        if let Some(o) = v.as_object_mut() {
            o.remove("targets");
        }
        Ok(v)
    };
    let send = move |body: Value| {
        spawn_local(async move {
            match api::call(
                "PUT",
                &path.get_value(),
                &csrf.get_value(),
                Body::Json(body),
            )
            .await
            {
                Ok(v) => {
                    fill(&v);
                    message.set("Saved.".into());
                }
                Err(e) => message.set(e),
            }
        });
    };
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match build() {
            Ok(v) => send(v),
            Err(e) => message.set(e),
        }
    };
    let save_raw = move |_| match serde_json::from_str::<Value>(&raw.get_untracked()) {
        Ok(v) => send(v),
        Err(e) => message.set(format!("Not valid JSON: {e}")),
    };
    let add_row = move |list: RwSignal<Vec<Row>>| {
        let id = next_id.get_value();
        next_id.set_value(id + 1);
        list.update(|l| {
            l.push(Row {
                id,
                cells: std::array::from_fn(|_| RwSignal::new(String::new())),
            })
        });
    };
    let remove_row =
        move |list: RwSignal<Vec<Row>>, id: u32| list.update(|l| l.retain(|r| r.id != id));
    let ro = !may_change;
    view! {
        <form class="card settings" aria-label="Settings" on:submit=save>
            <h2>"Settings"</h2>
            <div class="grid2">
                {FIELDS.iter().enumerate().map(|(i, (_, label, _))| {
                    let value = fields.with_value(|f| f[i]);
                    view! { <label>{*label} <input bind:value=value readonly=ro/></label> }
                }).collect_view()}
                <label>"State"
                    <select prop:value=move || state.get() on:change=move |ev| state.set(event_target_value(&ev)) disabled=ro>
                        {["active", "paused", "draining", "finished"].map(|s| view! { <option value=s>{s}</option> }).into_iter().collect_view()}
                    </select>
                </label>
                <label>"Priority (higher first on the overview)" <input bind:value=priority readonly=ro/></label>
                <label class="check"><input type="checkbox" bind:checked=fifo disabled=ro/> "Serve queues first in, first out (items queued from then on; waiting ones keep their place)"</label>
                <label class="check"><input type="checkbox" bind:checked=ignore_blocks disabled=ro/> "Ignore the global block list"</label>
            </div>
            <label>"Description (HTML, sanitised when saved)" <textarea rows="4" bind:value=description readonly=ro></textarea></label>
            <label>"Project admins (project-admin accounts, comma-separated)" <input bind:value=admins readonly=ro || !global/></label>
            <fieldset class="list-editor" aria-label="Pattern limits">
                <legend>"Pattern limits (items matching a pattern share their own rate limit)"</legend>
                <For each=move || limits.get() key=|r| r.id let:r>
                    <div class="row">
                        <label>"Name" <input bind:value=r.cells[0] readonly=ro/></label>
                        <label>"Pattern" <input bind:value=r.cells[1] readonly=ro/></label>
                        <label>"Rate" <input bind:value=r.cells[2] readonly=ro/></label>
                        <label>"Burst" <input bind:value=r.cells[3] readonly=ro/></label>
                        {may_change.then(|| view! { <button type="button" on:click=move |_| remove_row(limits, r.id)>"Remove"</button> })}
                    </div>
                </For>
                {may_change.then(|| view! { <button type="button" on:click=move |_| add_row(limits)>"Add pattern limit"</button> })}
            </fieldset>
            <fieldset class="list-editor" aria-label="Extra item fields">
                <legend>"Extra item fields (static strings sent with every claim)"</legend>
                <For each=move || extra.get() key=|r| r.id let:r>
                    <div class="row">
                        <label>"Field" <input bind:value=r.cells[0] readonly=ro/></label>
                        <label>"Value" <input bind:value=r.cells[1] readonly=ro/></label>
                        {may_change.then(|| view! { <button type="button" on:click=move |_| remove_row(extra, r.id)>"Remove"</button> })}
                    </div>
                </For>
                {may_change.then(|| view! { <button type="button" on:click=move |_| add_row(extra)>"Add extra field"</button> })}
            </fieldset>
            {may_change.then(|| view! { <button type="submit">"Save settings"</button> })}
            <p role="status" aria-label="Settings status">{message}</p>
            {may_change.then(|| view! {
                <details>
                    <summary>"Advanced: raw JSON"</summary>
                    <textarea rows="16" bind:value=raw aria-label="Settings as JSON"></textarea>
                    <button type="button" on:click=save_raw>"Save raw JSON"</button>
                </details>
            })}
        </form>
    }
}
