//! The home page's world map of warriors: an inline SVG (so the server's HTML shows it whole)
//! of the world's land with a dot per whole degree where Warrior HQ's instances are.
//!
//! The land is `land-110m.txt`, one SVG path made once by `scripts/world-outline.js` from
//! Natural Earth's 1:110m land (public domain), as the npm package world-atlas 2.0.2 ships it,
//! read with topojson-client: equirectangular, in degrees (x = longitude, y = minus latitude),
//! simplified, without Antarctica. No tile service, no request: the page carries it.

use crate::{format::thousands, model::FleetStats};
use leptos::prelude::*;

/// The world's land as one SVG path (see the module's note on its origin).
const LAND: &str = include_str!("land-110m.txt");

/// The latitudes the map shows, north to south: Antarctica and the far north are left out.
const NORTH: i32 = 84;
const SOUTH: i32 = -60;

/// A dot's radius, in degrees, for `n` warriors: the area grows with the count, within bounds.
fn radius(n: u64) -> f64 {
    (1.1 + 0.8 * (n as f64).sqrt()).min(7.0)
}

/// "1 warrior", "12 warriors".
fn warriors(n: u64) -> String {
    match n {
        1 => "1 warrior".into(),
        n => format!("{} warriors", thousands(n)),
    }
}

/// The map of `fleet`'s positions, with a line saying how many warriors it shows.
#[component]
pub fn WarriorMap(fleet: FleetStats) -> impl IntoView {
    let placed = fleet.placed();
    let places = fleet.positions.len();
    let caption = if fleet.warriors == 0 {
        "No warrior has reported to Warrior HQ in the last 15 minutes.".to_string()
    } else {
        format!(
            "{} reporting to Warrior HQ in the last 15 minutes; {} of them said where they are, in {} places.",
            warriors(fleet.warriors),
            thousands(placed),
            thousands(places as u64),
        )
    };
    let label = format!(
        "World map: {} in {} places",
        warriors(placed),
        thousands(places as u64)
    );
    // The largest dots first, so that small ones nearby stay visible on top.
    let mut dots = fleet.positions.clone();
    dots.retain(|&(lat, lng, _)| (SOUTH..=NORTH).contains(&lat) && (-180..=180).contains(&lng));
    dots.sort_by_key(|&(lat, lng, n)| (std::cmp::Reverse(n), lat, lng));
    let dots = dots
        .into_iter()
        .map(|(lat, lng, n)| {
            let r = format!("{:.1}", radius(n));
            let halo = format!("{:.1}", radius(n) * 2.2);
            let (x, y) = (lng.to_string(), (-lat).to_string());
            view! {
                <g class="dot">
                    <title>{format!("{} near {lat}°, {lng}°", warriors(n))}</title>
                    <circle class="halo" cx=x.clone() cy=y.clone() r=halo></circle>
                    <circle class="core" cx=x cy=y r=r></circle>
                </g>
            }
        })
        .collect_view();
    let view_box = format!("-180 {} 360 {}", -NORTH, NORTH - SOUTH);
    view! {
        <section class="card world" aria-label="Warriors around the world">
            <h2>"Warriors around the world"</h2>
            <svg class="world-map" viewBox=view_box role="img" aria-label=label>
                <path class="land" d=LAND></path>
                <g class="dots">{dots}</g>
            </svg>
            <p class="muted">{caption}</p>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_land_is_one_closed_path_in_degrees() {
        assert!(LAND.starts_with('M') && LAND.ends_with('z'));
        assert!(LAND.len() < 24 * 1024, "small: {} bytes", LAND.len());
        assert!(LAND.chars().all(|c| "Mlz0123456789.- ".contains(c)));
        assert!(LAND.matches('M').count() > 50, "continents and islands");
    }

    #[test]
    fn dots_grow_with_their_count_within_bounds() {
        assert!(radius(1) < radius(4) && radius(4) < radius(100));
        assert!(radius(1_000_000) <= 7.0);
        assert_eq!(warriors(1), "1 warrior");
        assert_eq!(warriors(1200), "1,200 warriors");
    }
}
