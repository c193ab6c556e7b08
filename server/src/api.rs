//! HTTP handlers of everyone but admins: the warrior API, backfeed, the public JSON and pages,
//! the live websocket and feed. What they share with the admin API (the error type, project
//! lookup, client address, secrets compared in constant time) is [`crate::web`].
//!
//! | module | routes |
//! |---|---|
//! | [`warrior`] | `/SLUG/request`, `/SLUG/multi=N//request`, `/SLUG/done`, `/SLUG/done+request`, `/SLUG/release`, `/SLUG/items/ITEM.json` |
//! | [`extras`] | `/SLUG/upload`, `/SLUG/uploaded`, `/SLUG/rescue-me`, `/now`, `/SLUG/charts.json`, `/SLUG/update-status.json` |
//! | [`backfeed`] | `/backfeed/legacy/SLUG-SECRET` |
//! | [`public`] | `/healthz`, `/SLUG/stats.json`, `/SLUG/recent.json`, `/SLUG/tracker-stats.json`, `/projects.json` |
//! | [`downloaders`] | `/SLUG/downloaders.json` |
//! | [`pages`] | `/board/...`: the pages' own data |
//! | [`live`] | `/SLUG/ws`: the live websocket |
//! | [`feed`] | `/SLUG/live`: server-sent events |
//! | [`hq`] | `/api/register.json`, `/api/update.json`, `/api/stats.json`: Warrior HQ's fleet |
//! | [`pipeline`] | `/SLUG/token=SECRET/...` and `Authorization: Bearer`: the calling pipeline |

pub mod backfeed;
pub mod downloaders;
pub mod extras;
pub mod feed;
pub mod hq;
pub mod live;
pub mod pages;
pub mod pipeline;
pub mod public;
pub mod warrior;
