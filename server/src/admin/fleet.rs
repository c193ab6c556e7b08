//! `GET /admin/api/fleet`: the fleet for the panel's Fleet page: every downloader seen on the
//! warrior API ([`crate::fleet`]) and every Warrior HQ instance, with their addresses (shown
//! nowhere else), searched, sorted and paged here, and totals per project and per version.
//! A project admin sees the fleet of their projects only.

use super::auth::Caller;
use crate::{
    state::AppState,
    store::now_ms,
    web::{ApiError, ApiResult},
};
use app::model::{
    admin::{
        FleetClient, FleetProjectTotal, FleetSort, FleetVersionTotal, FleetView, FleetWarrior,
    },
    MAX_SELECTED, OTHER_SELECTED,
};
use axum::{
    extract::{Query, State},
    Json,
};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// The most rows of each list one answer carries.
pub const MAX_LIMIT: usize = 1000;

/// The longest search.
const MAX_QUERY: usize = 200;

/// Query of `GET /admin/api/fleet`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FleetQuery {
    /// Search: part of a name, project, address, user agent or version (any case).
    #[serde(default)]
    q: String,
    /// Order: `seen` (default), `downloader`, `project`, `ip`, `version`, `in_flight`, `rate`.
    #[serde(default)]
    sort: Option<String>,
    /// `reverse` turns the order around.
    #[serde(default)]
    dir: Option<String>,
    /// Rows to skip, in each list.
    #[serde(default)]
    offset: usize,
    /// Rows of each list (default 200, at most [`MAX_LIMIT`]).
    #[serde(default)]
    limit: Option<usize>,
}

/// `GET /admin/api/fleet?q=&sort=&dir=&offset=&limit=`.
#[utoipa::path(
    get,
    path = "/fleet",
    tag = "admin",
    params(FleetQuery),
    responses((status = 200, body = FleetView)),
)]
pub async fn show_fleet(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<FleetQuery>,
) -> ApiResult<Json<FleetView>> {
    let sort = match query.sort.as_deref() {
        None | Some("") => FleetSort::default(),
        Some(s) => FleetSort::parse(s).ok_or_else(|| {
            let all: Vec<&str> = FleetSort::ALL.iter().map(|o| o.as_str()).collect();
            ApiError::bad_request(format!("sort is one of {}.", all.join(", ")))
        })?,
    };
    let reverse = match query.dir.as_deref() {
        None | Some("") => false,
        Some("reverse") => true,
        Some(_) => return Err(ApiError::bad_request("dir is empty or reverse.")),
    };
    if query.q.len() > MAX_QUERY {
        return Err(ApiError::bad_request(format!(
            "q is at most {MAX_QUERY} bytes."
        )));
    }
    let limit = query.limit.unwrap_or(200).min(MAX_LIMIT);
    let now = now_ms();
    let (clients, warriors) = tokio::try_join!(
        state.store.fleet().api_fleet(now),
        state.store.fleet().registered(now),
    )?;
    let visible = |project: &str| caller.may_view(project).is_ok();
    let clients: Vec<FleetClient> = clients
        .into_iter()
        .filter(|c| visible(&c.project))
        .collect();
    let warriors: Vec<FleetWarrior> = warriors
        .into_iter()
        .filter(|w| visible(&w.selected_project))
        .map(|w| FleetWarrior {
            id: w.id,
            downloader: w.downloader,
            project: w.selected_project,
            version: w.version,
            ip: w.ip,
            lat_lng: w.lat_lng,
            seen: w.seen,
        })
        .collect();
    let (projects, versions) = totals(&clients, &warriors);
    let q = query.q.trim().to_lowercase();
    let mut clients: Vec<FleetClient> = clients.into_iter().filter(|c| c.matches(&q)).collect();
    let mut warriors: Vec<FleetWarrior> = warriors.into_iter().filter(|w| w.matches(&q)).collect();
    sort.sort_clients(&mut clients, reverse);
    sort.sort_warriors(&mut warriors, reverse);
    let page = |len: usize| query.offset.min(len)..query.offset.saturating_add(limit).min(len);
    Ok(Json(FleetView {
        now,
        silence_s: state.store.fleet().fleet_silence_ms() / 1000,
        downloaders_matched: clients.len() as u64,
        downloaders: clients.drain(page(clients.len())).collect(),
        warriors_matched: warriors.len() as u64,
        warriors: warriors.drain(page(warriors.len())).collect(),
        projects,
        versions,
    }))
}

/// Totals per project (by slug; HQ instances under what they selected) and per version (API
/// downloaders by the seesaw version of their user agent, HQ instances by theirs), newest
/// version first.
fn totals(
    clients: &[FleetClient],
    warriors: &[FleetWarrior],
) -> (Vec<FleetProjectTotal>, Vec<FleetVersionTotal>) {
    let mut projects: BTreeMap<&str, FleetProjectTotal> = BTreeMap::new();
    let mut names: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut versions: BTreeMap<&str, FleetVersionTotal> = BTreeMap::new();
    for c in clients {
        let p = projects.entry(&c.project).or_default();
        p.downloaders += 1;
        p.items_per_s += c.items_per_s;
        // Claims are held per name: counted once however many addresses it calls from.
        if names.entry(&c.project).or_default().insert(&c.downloader) {
            p.in_flight += c.in_flight;
        }
        versions.entry(&c.seesaw).or_default().downloaders += 1;
    }
    for w in warriors {
        projects.entry(&w.project).or_default().warriors += 1;
        versions.entry(&w.version).or_default().warriors += 1;
    }
    let projects = projects
        .into_iter()
        .map(|(slug, mut t)| {
            t.project = slug.to_string();
            t.names = names.get(slug).map_or(0, |n| n.len() as u64);
            t
        })
        .collect();
    let mut versions: Vec<FleetVersionTotal> = versions
        .into_iter()
        .map(|(v, mut t)| {
            t.version = v.to_string();
            t
        })
        .collect();
    versions.sort_by(|a, b| app::model::admin::version_order(&b.version, &a.version));
    (capped_projects(projects), capped_versions(versions))
}

/// At most [`MAX_SELECTED`] projects, the busiest, and the rest added up under
/// [`OTHER_SELECTED`]: HQ instances name any slug they like.
fn capped_projects(mut projects: Vec<FleetProjectTotal>) -> Vec<FleetProjectTotal> {
    if projects.len() <= MAX_SELECTED {
        return projects;
    }
    let weight = |t: &FleetProjectTotal| t.downloaders + t.warriors;
    projects.sort_by(|a, b| {
        weight(b)
            .cmp(&weight(a))
            .then_with(|| a.project.cmp(&b.project))
    });
    let mut other = FleetProjectTotal {
        project: OTHER_SELECTED.into(),
        ..Default::default()
    };
    for t in projects.drain(MAX_SELECTED..) {
        other.downloaders += t.downloaders;
        other.names += t.names;
        other.warriors += t.warriors;
        other.in_flight += t.in_flight;
        other.items_per_s += t.items_per_s;
    }
    projects.sort_by(|a, b| a.project.cmp(&b.project));
    projects.push(other);
    projects
}

/// At most [`MAX_SELECTED`] versions, newest first, and the rest added up under
/// [`OTHER_SELECTED`]: versions come from what clients say.
fn capped_versions(mut versions: Vec<FleetVersionTotal>) -> Vec<FleetVersionTotal> {
    if versions.len() <= MAX_SELECTED {
        return versions;
    }
    let mut other = FleetVersionTotal {
        version: OTHER_SELECTED.into(),
        ..Default::default()
    };
    for t in versions.drain(MAX_SELECTED..) {
        other.downloaders += t.downloaders;
        other.warriors += t.warriors;
    }
    versions.push(other);
    versions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_of_made_up_projects_and_versions_are_capped_and_added_up() {
        let warriors: Vec<FleetWarrior> = (0..500u64)
            .map(|i| FleetWarrior {
                id: i,
                project: format!("made-up-{i}"),
                version: format!("9.{i}"),
                ..Default::default()
            })
            .collect();
        let (projects, versions) = totals(&[], &warriors);
        assert_eq!(projects.len(), MAX_SELECTED + 1);
        assert_eq!(projects.iter().map(|p| p.warriors).sum::<u64>(), 500);
        assert_eq!(projects.last().unwrap().project, OTHER_SELECTED);
        assert_eq!(versions.len(), MAX_SELECTED + 1);
        assert_eq!(versions.iter().map(|v| v.warriors).sum::<u64>(), 500);
        assert_eq!(versions[0].version, "9.499", "newest first");
    }

    #[test]
    fn totals_count_claims_once_per_name_and_versions_newest_first() {
        let c = |project: &str, downloader: &str, ip: &str, seesaw: &str, held: u64| FleetClient {
            id: format!("{project}:{downloader}{ip}"),
            project: project.into(),
            downloader: downloader.into(),
            ip: ip.into(),
            seesaw: seesaw.into(),
            in_flight: held,
            items_per_s: 0.5,
            ..Default::default()
        };
        let clients = [
            c("p1", "alice", "a", "0.10.3", 4),
            c("p1", "alice", "b", "0.9.1", 4),
            c("p1", "bob", "a", "0.10.3", 1),
            c("p2", "alice", "a", "", 0),
        ];
        let warriors = [FleetWarrior {
            project: "auto".into(),
            version: "0.10.3".into(),
            ..Default::default()
        }];
        let (projects, versions) = totals(&clients, &warriors);
        let p1 = &projects.iter().find(|p| p.project == "p1").unwrap();
        assert_eq!((p1.downloaders, p1.names, p1.in_flight), (3, 2, 5));
        assert!((p1.items_per_s - 1.5).abs() < 1e-9);
        assert_eq!(
            projects
                .iter()
                .map(|p| p.project.as_str())
                .collect::<Vec<_>>(),
            ["auto", "p1", "p2"]
        );
        let v: Vec<(&str, u64, u64)> = versions
            .iter()
            .map(|v| (v.version.as_str(), v.downloaders, v.warriors))
            .collect();
        assert_eq!(v, [("0.10.3", 2, 1), ("0.9.1", 1, 0), ("", 1, 0)]);
    }
}
