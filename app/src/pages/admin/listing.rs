//! A project's lifecycle and Warrior listing (its entry in the generated `projects.json`), and
//! the `auto_project` card of the Warrior page with its pin.

use super::{
    api::{self, Body},
    loaded::Loaded,
};
use crate::model::admin::{AutoProject, Listing, Pin, ProjectListing};
use leptos::{prelude::*, task::spawn_local};

/// The signals of the listing form, one per field.
#[derive(Clone, Copy)]
struct Form {
    listed: RwSignal<bool>,
    repository: RwSignal<String>,
    logo: RwSignal<String>,
    deadline: RwSignal<String>,
    host: RwSignal<String>,
    marker_html: RwSignal<String>,
    lat_lng: RwSignal<String>,
    weight: RwSignal<String>,
}

impl Form {
    fn new() -> Self {
        Form {
            listed: RwSignal::new(true),
            repository: RwSignal::new(String::new()),
            logo: RwSignal::new(String::new()),
            deadline: RwSignal::new(String::new()),
            host: RwSignal::new(String::new()),
            marker_html: RwSignal::new(String::new()),
            lat_lng: RwSignal::new(String::new()),
            weight: RwSignal::new("0".into()),
        }
    }

    fn fill(&self, l: &Listing) {
        self.listed.set(l.listed);
        self.repository.set(l.repository.clone());
        self.logo.set(l.logo.clone());
        self.deadline.set(l.deadline.clone());
        self.host.set(l.host.clone());
        self.marker_html.set(l.marker_html.clone());
        self.weight.set(l.weight.to_string());
        self.lat_lng.set(
            l.lat_lng
                .map(|[a, b]| format!("{a}, {b}"))
                .unwrap_or_default(),
        );
    }

    /// The listing the form describes, or why the position is not one.
    fn listing(&self) -> Result<Listing, String> {
        let ll = self.lat_lng.get_untracked();
        let lat_lng = if ll.trim().is_empty() {
            None
        } else {
            let parts: Vec<Option<f64>> = ll.split(',').map(|p| p.trim().parse().ok()).collect();
            match parts[..] {
                [Some(a), Some(b)] => Some([a, b]),
                _ => return Err("Position: two numbers, latitude, longitude.".into()),
            }
        };
        let weight = self
            .weight
            .get_untracked()
            .trim()
            .parse()
            .map_err(|_| "Weight: a whole number from 0 to 1000.".to_string())?;
        Ok(Listing {
            listed: self.listed.get_untracked(),
            repository: self.repository.get_untracked(),
            logo: self.logo.get_untracked(),
            deadline: self.deadline.get_untracked(),
            host: self.host.get_untracked(),
            marker_html: self.marker_html.get_untracked(),
            lat_lng,
            weight,
            approved: None,
        })
    }
}

/// The project's state with its recorded changes, and its Warrior listing.
#[component]
pub fn ListingEditor(
    slug: String,
    csrf: StoredValue<String>,
    may_change: bool,
    global: bool,
) -> impl IntoView {
    let path = StoredValue::new(format!("/admin/api/{slug}/listing"));
    let version = RwSignal::new(0u32);
    let loaded = LocalResource::new(move || {
        version.track();
        api::get::<ProjectListing>(path.get_value())
    });
    let form = Form::new();
    let message = RwSignal::new(String::new());
    Effect::new(move || {
        if let Some(Ok(v)) = loaded.get() {
            form.fill(&v.listing);
        }
    });
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let listing = match form.listing() {
            Ok(l) => l,
            Err(e) => return message.set(e),
        };
        spawn_local(async move {
            let body = Body::Json(api::json(&listing));
            let (path, csrf) = (path.get_value(), csrf.get_value());
            match api::call::<ProjectListing>("PUT", &path, &csrf, body).await {
                Ok(_) => {
                    message.set("Saved.".into());
                    version.update(|v| *v += 1);
                }
                Err(e) => message.set(e),
            }
        });
    };
    let ro = !may_change;
    view! {
        <section class="card" aria-label="Lifecycle">
            <h2>"Lifecycle"</h2>
            <Loaded reply=loaded show={|v: ProjectListing| view! {
                <p>"State now: " <span class=format!("badge state-{}", v.state) aria-label="State now">{v.state.clone()}</span></p>
                <p class="muted">"Draining (nothing left to hand out, claims still out) and finished (nothing queued or claimed) follow from the counts; paused and aborted are set in the settings."</p>
                <table aria-label="State changes">
                    <thead><tr><th>"When"</th><th>"From"</th><th>"To"</th></tr></thead>
                    <tbody>
                        {v.transitions.into_iter().map(|t| view! {
                            <tr><td>{api::when(t.t)}</td><td>{t.from}</td><td>{t.state}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
                {v.listing.pending().then(|| view! {
                    <p class="error" role="alert" aria-label="Approval">
                        "Waiting for a global admin: Warriors get this repository only once a global admin saves the listing (which approves it). "
                        {match v.listing.approved.clone().filter(|a| !a.is_empty()) {
                            Some(a) => format!("Until then they get the one approved before: {a}"),
                            None => "Until then the project is not offered to Warriors.".to_string(),
                        }}
                    </p>
                })}
                <h3>"Entry in projects.json"</h3>
                {if v.entry.is_null() {
                    view! { <p class="muted" aria-label="Warrior entry">"Not listed: Warriors do not see this project."</p> }.into_any()
                } else {
                    let text = serde_json::to_string_pretty(&v.entry).unwrap_or_default();
                    view! { <pre class="mono" aria-label="Warrior entry">{text}</pre> }.into_any()
                }}
            }}/>
        </section>
        <form class="card settings" aria-label="Warrior listing" on:submit=save>
            <h2>"Warrior listing"</h2>
            <div class="grid2">
                <label class="check"><input type="checkbox" bind:checked=form.listed disabled=ro/> "Offered to Warriors (auto_project may choose it)"</label>
                <label>"Repository (git URL)" <input bind:value=form.repository readonly=ro/></label>
                <label>"Logo URL" <input bind:value=form.logo readonly=ro/></label>
                <label>"Deadline (2013-04-30T23:59:59Z)" <input bind:value=form.deadline readonly=ro/></label>
                <label>"Host" <input bind:value=form.host readonly=ro/></label>
                <label>"Position (latitude, longitude)" <input bind:value=form.lat_lng readonly=ro/></label>
                <label>"Weight among auto Warriors (0-1000; global admins)"
                    <input type="number" min="0" max="1000" bind:value=form.weight readonly=ro || !global aria-label="Weight"/></label>
            </div>
            <p class="muted">"Today's Warrior set to auto picks among the projects with a weight, in proportion to it (auto_projects_config); older ones run auto_project."</p>
            <label>"Marker HTML (sanitised when saved)" <textarea rows="2" bind:value=form.marker_html readonly=ro></textarea></label>
            {may_change.then(|| view! { <button type="submit">"Save listing"</button> })}
            <p role="status" aria-label="Listing status">{message}</p>
        </form>
    }
}

/// The project "auto" Warriors run, the candidates in order, and the pin (global admins).
#[component]
pub fn AutoPin(csrf: StoredValue<String>, global: bool) -> impl IntoView {
    const PATH: &str = "/admin/api/warrior/auto";
    let version = RwSignal::new(0u32);
    let loaded = LocalResource::new(move || {
        version.track();
        api::get::<AutoProject>(PATH.into())
    });
    let message = RwSignal::new(String::new());
    let pin = move |slug: Option<String>| {
        spawn_local(async move {
            let body = Body::Json(api::json(&Pin { pin: slug }));
            match api::call::<AutoProject>("PUT", PATH, &csrf.get_value(), body).await {
                Ok(a) => {
                    message.set(match a.pinned {
                        Some(p) => format!("Pinned to {p}."),
                        None => "The tracker chooses.".into(),
                    });
                    version.update(|v| *v += 1);
                }
                Err(e) => message.set(e),
            }
        });
    };
    view! {
        <section class="card" aria-label="Auto project">
            <h2>"auto_project"</h2>
            <Loaded reply=loaded show={move |a: AutoProject| {
                let chosen = a.chosen.clone().unwrap_or_else(|| "none (no listed project has work)".into());
                let pinned = a.pinned.clone();
                view! {
                    <p>"Warriors set to auto run " <strong aria-label="Auto project now">{chosen}</strong>
                        {pinned.clone().map(|p| view! { " (pinned to " {p} ")" })}</p>
                    <p class="muted">"The tracker chooses the listed active project with work to hand out and the lowest priority (niceness), and moves on when it runs dry, pauses or finishes; a pin holds while its project serves."</p>
                    <p class="muted">"Today's Warriors pick among the projects with a weight that hand out work, in proportion to it: "
                        <strong aria-label="Auto projects config">{
                            if a.weights.is_empty() { "none weighted, so auto_project".to_string() }
                            else { a.weights.iter().map(|(p, w)| format!("{p} {w}")).collect::<Vec<_>>().join(", ") }
                        }</strong>". A pin overrides the weights too."</p>
                    <table aria-label="Auto project candidates">
                        <thead><tr><th>"Project"</th><th>"Priority"</th><th>"Weight"</th><th>"State"</th><th>"Waiting"</th><th></th></tr></thead>
                        <tbody>
                            {a.candidates.into_iter().map(|c| {
                                let slug = c.slug.clone();
                                let is_pinned = pinned.as_deref() == Some(c.slug.as_str());
                                view! {
                                    <tr>
                                        <td>{c.slug.clone()}</td>
                                        <td>{c.priority}</td>
                                        <td>{c.weight}</td>
                                        <td><span class=format!("badge state-{}", c.state)>{c.state.clone()}</span></td>
                                        <td>{crate::format::thousands(c.todo)}</td>
                                        <td>{(global && !is_pinned).then(|| view! {
                                            <button on:click=move |_| pin(Some(slug.clone())) aria-label=format!("Pin {}", c.slug)>"Pin"</button>
                                        })}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                    {(global && pinned.is_some()).then(|| view! {
                        <button on:click=move |_| pin(None)>"Unpin: let the tracker choose"</button>
                    })}
                }
            }}/>
            <p role="status" aria-label="Auto project status">{message}</p>
        </section>
    }
}
