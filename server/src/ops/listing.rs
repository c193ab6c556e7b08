//! A project's Warrior listing (what Warrior HQ's list carries for it): the checks every saved
//! listing passes, `KEY=VALUE` changes from the command line, and saving with its audit entry.

use super::{invalid, Actor, OpsResult};
use crate::store::Store;
use app::model::admin::Listing;

/// The longest URL of a listing (repository, logo).
pub const MAX_URL: usize = 1024;
/// The longest marker HTML of a listing.
pub const MAX_MARKER: usize = 4096;
/// The largest weight among "auto" Warriors.
pub const MAX_WEIGHT: u32 = 1000;

/// Why `url` may not be a listing's URL `name` (`None`: it may): an `https://` URL (a logo may
/// also be `http://`) with a host, without spaces, control characters or quotes, at most
/// [`MAX_URL`] bytes. The Warrior runs `git clone REPOSITORY DIR` with the repository as given
/// (seesaw-kit `seesaw/warrior.py`, warrior4's runner): anything but a plain https URL (a
/// leading `-` is read by git as an option, `ext::` runs a command, `file://` reads the
/// volunteer's disk) would be code or access on every volunteer's machine. Checked when a
/// listing is saved and again when the project list is made.
pub fn url_problem(name: &str, url: &str) -> Option<String> {
    if url.len() > MAX_URL {
        return Some(format!("{name} is at most {MAX_URL} bytes"));
    }
    let schemes: &[&str] = if name == "repository" {
        &["https://"]
    } else {
        &["https://", "http://"]
    };
    let Some(rest) = schemes.iter().find_map(|s| url.strip_prefix(s)) else {
        return Some(format!(
            "{name} must be a URL starting with {}",
            schemes.join(" or ")
        ));
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_ok = !host.is_empty()
        && !host.starts_with(['-', '.'])
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b));
    if !host_ok {
        return Some(format!("{name} must name a host (https://HOST/...)"));
    }
    if url
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '`' | '\\'))
    {
        return Some(format!("{name} must be a URL without spaces or quotes"));
    }
    None
}

/// `listing` with its HTML sanitised, or why it cannot be saved.
pub fn check_listing(mut listing: Listing) -> Result<Listing, String> {
    for (name, url) in [
        ("repository", &mut listing.repository),
        ("logo", &mut listing.logo),
    ] {
        *url = url.trim().to_string();
        if let Some(why) = (!url.is_empty()).then(|| url_problem(name, url)).flatten() {
            return Err(why);
        }
    }
    listing.deadline = listing.deadline.trim().to_string();
    if !listing.deadline.is_empty() && !valid_deadline(&listing.deadline) {
        return Err("deadline must be like 2013-04-30T23:59:59Z".into());
    }
    listing.host = listing.host.trim().to_string();
    let host_ok = listing.host.len() <= 253
        && listing
            .host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:".contains(&b));
    if !host_ok {
        return Err("host is a host name (at most 253 characters)".into());
    }
    if listing.marker_html.len() > MAX_MARKER {
        return Err(format!("marker_html is at most {MAX_MARKER} bytes"));
    }
    listing.marker_html = ammonia::clean(&listing.marker_html);
    if let Some([lat, lng]) = listing.lat_lng {
        if !(lat.is_finite() && lng.is_finite() && lat.abs() <= 90.0 && lng.abs() <= 180.0) {
            return Err("lat_lng is [latitude -90..90, longitude -180..180]".into());
        }
    }
    if listing.weight > MAX_WEIGHT {
        return Err(format!("weight is 0 to {MAX_WEIGHT}"));
    }
    if listing.listed && listing.repository.is_empty() {
        return Err("a listed project needs its repository (the Warrior runs it)".into());
    }
    Ok(listing)
}

/// `listing` with `KEY=VALUE` changes applied (`listed`, `repository`, `logo`, `deadline`,
/// `host`, `marker_html`, `lat_lng` as `LAT,LNG` or empty, `weight`), then checked.
pub fn apply_changes(listing: &Listing, changes: &[String]) -> OpsResult<Listing> {
    let mut l = listing.clone();
    for change in changes {
        let (key, value) = change
            .split_once('=')
            .ok_or_else(|| invalid(format!("{change:?} is not KEY=VALUE")))?;
        match key {
            "listed" => {
                l.listed = value
                    .parse()
                    .map_err(|_| invalid("listed is true or false"))?
            }
            "repository" => l.repository = value.into(),
            "logo" => l.logo = value.into(),
            "deadline" => l.deadline = value.into(),
            "host" => l.host = value.into(),
            "marker_html" => l.marker_html = value.into(),
            "lat_lng" if value.is_empty() => l.lat_lng = None,
            "lat_lng" => {
                let (lat, lng) = value
                    .split_once(',')
                    .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
                    .ok_or_else(|| invalid("lat_lng is LAT,LNG"))?;
                l.lat_lng = Some([lat, lng]);
            }
            "weight" => {
                l.weight = value
                    .parse()
                    .map_err(|_| invalid(format!("weight is 0 to {MAX_WEIGHT}")))?
            }
            other => {
                return Err(invalid(format!(
                    "unknown listing key {other:?} (listed, repository, logo, deadline, host, \
                     marker_html, lat_lng, weight)"
                )))
            }
        }
    }
    check_listing(l).map_err(invalid)
}

/// Saves `new` as the listing of `slug` (it was `old`), with an audit entry saying what
/// changed for the fleet: listed or not, the repository, the weight.
pub async fn save(
    store: &Store,
    actor: &Actor,
    slug: &str,
    old: &Listing,
    new: &Listing,
) -> OpsResult<()> {
    store.projects().save_listing(slug, new).await?;
    let mut detail = if new.listed {
        format!("listed, {}", new.repository)
    } else {
        "not listed".into()
    };
    if new.pending() {
        detail.push_str(" (waiting for a global admin's approval)");
    }
    if new.weight != old.weight {
        detail.push_str(&format!("; weight {} -> {}", old.weight, new.weight));
    }
    actor.record(store, "listing.save", slug, 1, detail).await?;
    Ok(())
}

/// `%Y-%m-%dT%H:%M:%SZ` with plausible numbers.
pub fn valid_deadline(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        s.get(r.clone())?
            .parse()
            .ok()
            .filter(|_| b[r].iter().all(u8::is_ascii_digit))
    };
    b.len() == 20
        && (b[4], b[7], b[10], b[13], b[16], b[19]) == (b'-', b'-', b'T', b':', b':', b'Z')
        && digits(0..4).is_some()
        && digits(5..7).is_some_and(|m| (1..=12).contains(&m))
        && digits(8..10).is_some_and(|d| (1..=31).contains(&d))
        && digits(11..13).is_some_and(|h| h < 24)
        && digits(14..16).is_some_and(|m| m < 60)
        && digits(17..19).is_some_and(|s| s < 61)
}

#[cfg(test)]
mod tests {
    use super::url_problem;

    /// What every volunteer's Warrior would run `git clone` with: a plain https URL only.
    #[test]
    fn a_repository_is_a_plain_https_url() {
        for ok in [
            "https://github.com/ArchiveTeam/urls-grab",
            "https://github.com/ArchiveTeam/urls-grab.git",
            "https://git.example.org:8443/team/grab?x=1#main",
        ] {
            assert_eq!(url_problem("repository", ok), None, "{ok}");
        }
        for bad in [
            "--upload-pack=touch /tmp/pwned;://x",
            "-https://github.com/x",
            "javascript://alert(1)",
            "ext::sh -c touch% /tmp/pwned",
            "file:///etc/passwd",
            "git://github.com/ArchiveTeam/urls-grab",
            "http://github.com/ArchiveTeam/urls-grab",
            "https://",
            "https://-oProxyCommand=x/y",
            "https:///path",
            "https://github.com/x y",
            "https://github.com/x\ty",
            "https://github.com/x'$(id)'",
            "https://github.com/\"x\"",
            "ssh://git@github.com/x",
        ] {
            assert!(url_problem("repository", bad).is_some(), "{bad}");
        }
        assert_eq!(url_problem("logo", "http://example.org/logo.png"), None);
        assert!(url_problem("logo", "javascript://x").is_some());
        let long = format!("https://example.org/{}", "a".repeat(2000));
        assert!(url_problem("repository", &long)
            .unwrap()
            .contains("at most"));
    }
}
