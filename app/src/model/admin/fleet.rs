//! The fleet in the admin API (`GET /admin/api/fleet`): every downloader seen on the warrior
//! API and every Warrior HQ instance, searched, sorted and paged by the server, with totals per
//! project and per version. The only place addresses are shown.

use serde::{Deserialize, Serialize};

/// One downloader seen on the warrior API: a downloader name calling one project from one
/// address.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FleetClient {
    /// `SLUG:HEX`, the same in every process.
    pub id: String,
    /// The project it calls.
    pub project: String,
    /// The downloader name it sends.
    pub downloader: String,
    /// The address it calls from.
    pub ip: String,
    /// Its last user agent (cut to the stored length).
    pub user_agent: String,
    /// The seesaw version its user agent names (`ArchiveTeam Warrior/0.10.3 ...`), or empty.
    pub seesaw: String,
    /// The script version of its last call (`version`), or empty.
    pub version: String,
    /// Its last call (ms).
    pub seen: u64,
    /// Claims the downloader holds in the project now (all its addresses together).
    pub in_flight: u64,
    /// Items it reported done per second, over the last minute.
    pub items_per_s: f64,
}

/// One Warrior HQ instance (`/api/update.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FleetWarrior {
    /// Its warrior id.
    pub id: u64,
    /// The downloader name it runs as.
    pub downloader: String,
    /// The project it selected: a slug, `auto`, or empty.
    pub project: String,
    /// Its warrior version.
    pub version: String,
    /// The address it called from.
    pub ip: String,
    /// Where it said it is (latitude, longitude).
    pub lat_lng: Option<(f64, f64)>,
    /// Its last update (ms).
    pub seen: u64,
}

/// The fleet of one project.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FleetProjectTotal {
    /// The project (for Warrior HQ instances: what they selected, `auto` included).
    pub project: String,
    /// Downloaders seen on its warrior API.
    pub downloaders: u64,
    /// Distinct downloader names among them.
    pub names: u64,
    /// Warrior HQ instances that selected it.
    pub warriors: u64,
    /// Claims its downloaders hold.
    pub in_flight: u64,
    /// Items its downloaders reported done per second, over the last minute.
    pub items_per_s: f64,
}

/// The fleet running one version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FleetVersionTotal {
    /// The seesaw version of API downloaders, the warrior version of HQ instances (`""`:
    /// not said).
    pub version: String,
    /// API downloaders whose user agent names it.
    pub downloaders: u64,
    /// Warrior HQ instances that run it.
    pub warriors: u64,
}

/// `GET /admin/api/fleet?q=&sort=&dir=&offset=&limit=`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FleetView {
    /// Server time (ms).
    pub now: u64,
    /// Seconds of silence after which a downloader is forgotten.
    pub silence_s: u64,
    /// One page of the API downloaders matching the search, in the order asked.
    pub downloaders: Vec<FleetClient>,
    /// API downloaders matching the search.
    pub downloaders_matched: u64,
    /// One page of the Warrior HQ instances matching the search, in the order asked.
    pub warriors: Vec<FleetWarrior>,
    /// Warrior HQ instances matching the search.
    pub warriors_matched: u64,
    /// Totals per project, over the whole fleet the caller may see (not only the search's).
    pub projects: Vec<FleetProjectTotal>,
    /// Totals per version, over the whole fleet the caller may see.
    pub versions: Vec<FleetVersionTotal>,
}

impl FleetView {
    /// API downloaders in all (the sum of the projects' totals).
    pub fn downloaders_total(&self) -> u64 {
        self.projects.iter().map(|p| p.downloaders).sum()
    }

    /// Warrior HQ instances in all.
    pub fn warriors_total(&self) -> u64 {
        self.projects.iter().map(|p| p.warriors).sum()
    }
}

/// The orders of the fleet's lists (`sort=`); each has its natural direction, which
/// `dir=reverse` turns around.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FleetSort {
    /// Last heard from, newest first.
    #[default]
    Seen,
    /// Downloader name, A to Z.
    Downloader,
    /// Project, A to Z.
    Project,
    /// Address, A to Z.
    Ip,
    /// Version (seesaw version for API downloaders), highest first.
    Version,
    /// Claims held, most first (HQ instances: by last heard from).
    InFlight,
    /// Items per second, most first (HQ instances: by last heard from).
    Rate,
}

impl FleetSort {
    /// Every order, as the panel offers them.
    pub const ALL: [FleetSort; 7] = [
        FleetSort::Seen,
        FleetSort::Downloader,
        FleetSort::Project,
        FleetSort::Ip,
        FleetSort::Version,
        FleetSort::InFlight,
        FleetSort::Rate,
    ];

    /// Its name in `sort=`.
    pub fn as_str(self) -> &'static str {
        match self {
            FleetSort::Seen => "seen",
            FleetSort::Downloader => "downloader",
            FleetSort::Project => "project",
            FleetSort::Ip => "ip",
            FleetSort::Version => "version",
            FleetSort::InFlight => "in_flight",
            FleetSort::Rate => "rate",
        }
    }

    /// The order named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// Sorts API downloaders in this order (`reverse`: the other way); ties by id.
    pub fn sort_clients(self, rows: &mut [FleetClient], reverse: bool) {
        use std::cmp::Ordering;
        let by = |a: &FleetClient, b: &FleetClient| -> Ordering {
            match self {
                FleetSort::Seen => b.seen.cmp(&a.seen),
                FleetSort::Downloader => a.downloader.cmp(&b.downloader),
                FleetSort::Project => a.project.cmp(&b.project),
                FleetSort::Ip => a.ip.cmp(&b.ip),
                FleetSort::Version => version_order(&b.seesaw, &a.seesaw),
                FleetSort::InFlight => b.in_flight.cmp(&a.in_flight),
                FleetSort::Rate => b.items_per_s.total_cmp(&a.items_per_s),
            }
        };
        rows.sort_by(|a, b| {
            let o = by(a, b).then_with(|| a.id.cmp(&b.id));
            if reverse {
                o.reverse()
            } else {
                o
            }
        });
    }

    /// Sorts Warrior HQ instances in this order (orders they have no figure for: by last
    /// heard from); ties by id.
    pub fn sort_warriors(self, rows: &mut [FleetWarrior], reverse: bool) {
        use std::cmp::Ordering;
        let by = |a: &FleetWarrior, b: &FleetWarrior| -> Ordering {
            match self {
                FleetSort::Downloader => a.downloader.cmp(&b.downloader),
                FleetSort::Project => a.project.cmp(&b.project),
                FleetSort::Ip => a.ip.cmp(&b.ip),
                FleetSort::Version => version_order(&b.version, &a.version),
                _ => b.seen.cmp(&a.seen),
            }
        };
        rows.sort_by(|a, b| {
            let o = by(a, b).then_with(|| a.id.cmp(&b.id));
            if reverse {
                o.reverse()
            } else {
                o
            }
        });
    }
}

/// Versions compared part by part, numbers as numbers (`0.10.3` after `0.9.1`).
pub fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<(u64, String)> {
        v.split(['.', '-', ' '])
            .map(|p| (p.parse::<u64>().unwrap_or(0), p.to_string()))
            .collect()
    };
    parts(a).cmp(&parts(b))
}

/// Whether `q` (lowercase) is found in any of `fields`, case-insensitively; an empty `q`
/// matches everything.
pub fn fleet_matches(q: &str, fields: &[&str]) -> bool {
    q.is_empty() || fields.iter().any(|f| f.to_lowercase().contains(q))
}

impl FleetClient {
    /// Whether search `q` (lowercase) matches its name, project, address, user agent or
    /// versions.
    pub fn matches(&self, q: &str) -> bool {
        fleet_matches(
            q,
            &[
                &self.downloader,
                &self.project,
                &self.ip,
                &self.user_agent,
                &self.seesaw,
                &self.version,
            ],
        )
    }
}

impl FleetWarrior {
    /// Whether search `q` (lowercase) matches its name, project, address or version.
    pub fn matches(&self, q: &str) -> bool {
        fleet_matches(
            q,
            &[&self.downloader, &self.project, &self.ip, &self.version],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: &str, downloader: &str, seesaw: &str, in_flight: u64, seen: u64) -> FleetClient {
        FleetClient {
            id: id.into(),
            downloader: downloader.into(),
            seesaw: seesaw.into(),
            in_flight,
            seen,
            ..Default::default()
        }
    }

    #[test]
    fn orders_have_their_natural_direction_and_reverse() {
        let mut rows = vec![
            client("p:1", "bob", "0.9.1", 1, 10),
            client("p:2", "alice", "0.10.3", 5, 30),
            client("p:3", "carol", "", 5, 20),
        ];
        let ids = |rows: &[FleetClient]| rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        FleetSort::Seen.sort_clients(&mut rows, false);
        assert_eq!(ids(&rows), ["p:2", "p:3", "p:1"], "newest first");
        FleetSort::Downloader.sort_clients(&mut rows, false);
        assert_eq!(ids(&rows), ["p:2", "p:1", "p:3"], "A to Z");
        FleetSort::Version.sort_clients(&mut rows, false);
        assert_eq!(ids(&rows), ["p:2", "p:1", "p:3"], "0.10.3 over 0.9.1");
        FleetSort::InFlight.sort_clients(&mut rows, false);
        assert_eq!(ids(&rows), ["p:2", "p:3", "p:1"], "most first, ties by id");
        FleetSort::InFlight.sort_clients(&mut rows, true);
        assert_eq!(ids(&rows), ["p:1", "p:3", "p:2"]);
        for o in FleetSort::ALL {
            assert_eq!(FleetSort::parse(o.as_str()), Some(o));
        }
        assert_eq!(FleetSort::parse("fastest"), None);
    }

    #[test]
    fn searches_ignore_case_and_the_view_reads_back_as_sent() {
        let c = FleetClient {
            ip: "192.0.2.7".into(),
            user_agent: "ArchiveTeam Warrior/0.10.3".into(),
            ..client("p:1", "Alice", "0.10.3", 0, 0)
        };
        assert!(c.matches("alice") && c.matches("192.0.2") && c.matches("warrior/0.10"));
        assert!(!c.matches("bob"));
        let view = FleetView {
            now: 5,
            silence_s: 900,
            downloaders: vec![c],
            downloaders_matched: 1,
            warriors: vec![FleetWarrior {
                id: 3,
                lat_lng: Some((51.5, -0.1)),
                ..Default::default()
            }],
            warriors_matched: 1,
            projects: vec![FleetProjectTotal {
                project: "p".into(),
                downloaders: 1,
                warriors: 2,
                ..Default::default()
            }],
            versions: vec![],
        };
        let json = serde_json::to_string(&view).unwrap();
        assert_eq!(serde_json::from_str::<FleetView>(&json).unwrap(), view);
        assert_eq!((view.downloaders_total(), view.warriors_total()), (1, 2));
        assert!(json.contains(r#""lat_lng":[51.5,-0.1]"#), "{json}");
    }
}
