//! The settings form of a project page: every setting as a labelled field, pattern limits and
//! extra item fields as small list editors, checked by the server (as `tracker project set`
//! checks them) with its reason shown; the raw JSON stays available under "Advanced".

use super::api::{self, Body};
use crate::model::admin::{
    PatternLimit, ProjectSettings, SettingField, SETTING_FIELDS, SUGGESTED_DECAY_FACTOR,
};
use leptos::{prelude::*, task::spawn_local};
use serde_json::Value;

/// The plain text fields of the form: the settings the codec labels, in its order.
fn plain_fields() -> impl Iterator<Item = &'static SettingField> {
    SETTING_FIELDS.iter().filter(|f| f.label.is_some())
}

/// The form's groups, by concern: (anchor, legend, the plain fields in it by name). The
/// fields with controls of their own are placed in the view.
const GROUPS: [(&str, &str, &[&str]); 8] = [
    (
        "shown",
        "Shown to volunteers",
        &["title", "banner", "domains"],
    ),
    ("running", "Running", &[]),
    ("claims", "Claims", &["item_pattern", "min_version", "tags"]),
    (
        "limits",
        "Limits",
        &["rate", "burst", "dl_max_claims", "claims_limit"],
    ),
    (
        "reclaims",
        "Reclaims and failures",
        &["reclaim_ttl", "max_attempts"],
    ),
    ("blocks", "Blocks", &["auto_block_ttl"]),
    (
        "backfeed",
        "Backfeed",
        &["bloom_capacity", "backfeed_shards", "shard_pattern"],
    ),
    (
        "storage",
        "Storage",
        &["offload_keep", "queue_high", "segment_items", "log_keep"],
    ),
];

/// The entries of a comma-separated list.
fn split(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// `f` as JSON writes it (`0.0`, `2.5`).
fn number(f: f64) -> String {
    Value::from(f).to_string()
}

/// The number `text` holds, or why not.
fn float(text: &str, label: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .ok_or(format!("{label}: not a number."))
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
    let loaded = LocalResource::new(move || api::get::<ProjectSettings>(path.get_value()));
    let doc = RwSignal::new(ProjectSettings::default());
    let fields: Vec<RwSignal<String>> = plain_fields()
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
    let done_policy = RwSignal::new("keep".to_string());
    let require_token = RwSignal::new(false);
    // Score decay: on when its factor is above 0; switching it on suggests a factor.
    let (decay_on, decay_factor, decay_threshold) = (
        RwSignal::new(false),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let switch_decay = move |on: bool| {
        decay_on.set(on);
        let factor = decay_factor
            .get_untracked()
            .trim()
            .parse::<f64>()
            .unwrap_or(0.0);
        if on && factor <= 0.0 {
            decay_factor.set(number(SUGGESTED_DECAY_FACTOR));
        } else if !on {
            decay_factor.set(number(0.0));
        }
    };
    let limits: RwSignal<Vec<Row>> = RwSignal::new(vec![]);
    let extra: RwSignal<Vec<Row>> = RwSignal::new(vec![]);
    let next_id = StoredValue::new(1000u32);
    let fill = move |v: ProjectSettings| {
        let s = &v.settings;
        for (i, field) in plain_fields().enumerate() {
            fields.with_value(|f| f[i].set(field.panel_text(s)));
        }
        state.set(s.state.clone());
        done_policy.set(s.done_policy.clone());
        fifo.set(s.fifo);
        ignore_blocks.set(s.ignore_global_blocks);
        require_token.set(s.require_token);
        decay_on.set(s.decay_factor > 0.0);
        decay_factor.set(number(s.decay_factor));
        decay_threshold.set(number(s.decay_threshold));
        description.set(v.description.clone());
        priority.set(v.priority.unwrap_or(0).to_string());
        admins.set(v.admins.as_deref().unwrap_or_default().join(", "));
        limits.set(rows(
            s.pattern_limits
                .iter()
                .map(|p| {
                    [
                        p.name.clone(),
                        p.pattern.clone(),
                        number(p.rate),
                        number(p.burst),
                    ]
                })
                .collect(),
        ));
        extra.set(rows(
            s.extra
                .iter()
                .map(|(k, v)| [k.clone(), v.clone(), String::new(), String::new()])
                .collect(),
        ));
        raw.set(serde_json::to_string_pretty(&v).unwrap_or_default());
        doc.set(v);
    };
    Effect::new(move || {
        if let Some(Ok(v)) = loaded.get() {
            fill(v);
        }
    });
    // The document the form describes, or the first field that is not valid.
    let build = move || -> Result<ProjectSettings, String> {
        let mut v = doc.get_untracked();
        let s = &mut v.settings;
        for (i, field) in plain_fields().enumerate() {
            let text = fields.with_value(|f| f[i].get_untracked());
            field.set_text(s, &text)?;
        }
        s.state = state.get_untracked();
        s.done_policy = done_policy.get_untracked();
        s.fifo = fifo.get_untracked();
        s.ignore_global_blocks = ignore_blocks.get_untracked();
        s.require_token = require_token.get_untracked();
        s.decay_factor = if decay_on.get_untracked() {
            float(&decay_factor.get_untracked(), "Decay factor")?
        } else {
            0.0
        };
        s.decay_threshold = float(&decay_threshold.get_untracked(), "Decay threshold")?;
        s.pattern_limits = Vec::new();
        for r in limits.get_untracked() {
            let [name, pattern, rate, burst] = r.cells.map(|c| c.get_untracked());
            s.pattern_limits.push(PatternLimit {
                name: name.trim().to_string(),
                pattern,
                rate: float(&rate, "Pattern limit rate")?,
                burst: float(&burst, "Pattern limit burst")?,
            });
        }
        s.extra = extra
            .get_untracked()
            .into_iter()
            .map(|r| {
                let [k, val, ..] = r.cells.map(|c| c.get_untracked());
                (k.trim().to_string(), val)
            })
            .collect();
        v.description = description.get_untracked();
        v.priority = Some(
            priority
                .get_untracked()
                .trim()
                .parse::<i64>()
                .map_err(|_| "Priority: not a whole number.".to_string())?,
        );
        v.admins = Some(split(&admins.get_untracked()));
        // Upload targets are changed on their own (`/targets`), never by a save.
        v.targets.clear();
        Ok(v)
    };
    let send = move |body: Value| {
        spawn_local(async move {
            let (path, csrf) = (path.get_value(), csrf.get_value());
            match api::call::<ProjectSettings>("PUT", &path, &csrf, Body::Json(body)).await {
                Ok(v) => {
                    fill(v);
                    message.set("Saved.".into());
                }
                Err(e) => message.set(e),
            }
        });
    };
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match build().and_then(|v| serde_json::to_value(v).map_err(|e| e.to_string())) {
            Ok(v) => send(v),
            Err(e) => message.set(e),
        }
    };
    // The raw editor sends the JSON as typed: the server says what is wrong with it.
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
    // The plain text fields of group `names`, in the group's order.
    let inputs = move |names: &'static [&'static str]| {
        names
            .iter()
            .filter_map(|name| plain_fields().position(|f| f.name == *name))
            .map(|i| {
                let value = fields.with_value(|f| f[i]);
                let label = plain_fields().nth(i).and_then(|f| f.label);
                view! { <label>{label} <input bind:value=value readonly=ro/></label> }
            })
            .collect_view()
    };
    view! {
        <form class="card settings" aria-label="Settings" on:submit=save>
            <h2>"Settings"</h2>
            <nav class="jump" aria-label="Setting groups">
                {GROUPS.iter().map(|(id, legend, _)| view! { <a href=format!("#{id}")>{*legend}</a> }).collect_view()}
            </nav>
            <fieldset class="group" id=GROUPS[0].0 aria-label=GROUPS[0].1>
                <legend>{GROUPS[0].1}</legend>
                <div class="grid2">{inputs(GROUPS[0].2)}</div>
                <label>"Description (HTML, sanitised when saved)" <textarea rows="4" bind:value=description readonly=ro></textarea></label>
            </fieldset>
            <fieldset class="group" id=GROUPS[1].0 aria-label=GROUPS[1].1>
                <legend>{GROUPS[1].1}</legend>
                <div class="grid2">
                    <label>"State"
                        <select prop:value=move || state.get() on:change=move |ev| state.set(event_target_value(&ev)) disabled=ro>
                            {crate::model::lifecycle::SETTABLE.map(|s| view! { <option value=s>{s}</option> }).into_iter().collect_view()}
                        </select>
                    </label>
                    <label>"Priority (niceness: lower runs first, for auto_project and the overview)" <input bind:value=priority readonly=ro/></label>
                    {inputs(GROUPS[1].2)}
                </div>
                <label>"Project admins (project-admin accounts, comma-separated)" <input bind:value=admins readonly=ro || !global/></label>
            </fieldset>
            <fieldset class="group" id=GROUPS[2].0 aria-label=GROUPS[2].1>
                <legend>{GROUPS[2].1}</legend>
                <div class="grid2">
                    {inputs(GROUPS[2].2)}
                    <label class="check"><input type="checkbox" bind:checked=fifo disabled=ro/> "Serve queues first in, first out (items queued from then on; waiting ones keep their place)"</label>
                    <label class="check"><input type="checkbox" bind:checked=require_token disabled=ro/> "Require a pipeline token to claim"</label>
                </div>
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
            </fieldset>
            <fieldset class="group" id=GROUPS[3].0 aria-label=GROUPS[3].1>
                <legend>{GROUPS[3].1}</legend>
                <div class="grid2">{inputs(GROUPS[3].2)}</div>
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
            </fieldset>
            <fieldset class="group" id=GROUPS[4].0 aria-label=GROUPS[4].1>
                <legend>{GROUPS[4].1}</legend>
                <div class="grid2">
                    {inputs(GROUPS[4].2)}
                    <label class="check"><input type="checkbox" prop:checked=move || decay_on.get() on:change=move |ev| switch_decay(event_target_checked(&ev)) disabled=ro/> "Score decay: each reclaim multiplies an item's score by the factor and moves it back in its queue"</label>
                    <label>"Decay factor (0 to 1; 0: off)" <input bind:value=decay_factor readonly=move || ro || !decay_on.get()/></label>
                    <label>"Decay threshold (below it an item fails)" <input bind:value=decay_threshold readonly=ro/></label>
                </div>
            </fieldset>
            <fieldset class="group" id=GROUPS[5].0 aria-label=GROUPS[5].1>
                <legend>{GROUPS[5].1}</legend>
                <div class="grid2">
                    {inputs(GROUPS[5].2)}
                    <label class="check"><input type="checkbox" bind:checked=ignore_blocks disabled=ro/> "Ignore the global block list"</label>
                </div>
            </fieldset>
            <fieldset class="group" id=GROUPS[6].0 aria-label=GROUPS[6].1>
                <legend>{GROUPS[6].1}</legend>
                <div class="grid2">{inputs(GROUPS[6].2)}</div>
            </fieldset>
            <fieldset class="group" id=GROUPS[7].0 aria-label=GROUPS[7].1>
                <legend>{GROUPS[7].1}</legend>
                <div class="grid2">
                    <label>"Done items (big projects: keep Redis small)"
                        <select prop:value=move || done_policy.get() on:change=move |ev| done_policy.set(event_target_value(&ev)) disabled=ro>
                            <option value="keep">"keep (in Redis)"</option>
                            <option value="offload">"offload (to disk, exact)"</option>
                            <option value="discard">"discard (a filter only)"</option>
                        </select>
                    </label>
                    {inputs(GROUPS[7].2)}
                </div>
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

#[cfg(test)]
mod tests {
    use super::{plain_fields, GROUPS};

    #[test]
    fn every_plain_field_is_in_exactly_one_group() {
        for field in plain_fields() {
            let homes = GROUPS.iter().filter(|g| g.2.contains(&field.name)).count();
            assert_eq!(homes, 1, "{} is in {homes} groups", field.name);
        }
        let named: usize = GROUPS.iter().map(|g| g.2.len()).sum();
        assert_eq!(
            named,
            plain_fields().count(),
            "a group names a field the form lacks"
        );
    }
}
