//! The tracker process. [`start`] builds it from a [`Config`] (the same way for `tracker serve`
//! and the tests), [`Running::serve`] serves it.
//!
//! | module | what it is for |
//! |---|---|
//! | [`config`] | every setting: the environment and flags, read into one [`Config`] |
//! | [`state`] | the [`App`] every handler shares, and the background loops it starts |
//! | [`start`] | the one start-up path: connect, build the [`App`], the start-up tasks, serve |
//! | [`routes`] | the route table, grouped by caller |
//! | [`api`] | HTTP handlers: warrior API, public JSON, pages, live websocket and feed, backfeed |
//! | [`admin`] | the admin panel's JSON API: accounts, sessions, CSRF, bulk actions |
//! | [`cli`] | the `tracker` command line |
//! | [`limits`] | every limit on what clients send and hold, and the checks of warrior input |
//! | [`store`] | the Redis store: Lua scripts and typed operations (and the pages' data) |
//! | [`keys`] | every Redis key name |
//! | [`batcher`] | coalesces concurrent claims and dones into single script calls |
//! | [`fleet`] | the warrior API's callers gathered in the process, flushed every 2 s |
//! | [`hub`] | one pub/sub subscription folded into shared frames for the live websocket and feed |
//! | [`websocket`] | the server side of RFC 6455: a message framed once, written to every viewer as it is |
//! | [`viewers`] | live viewers admitted under the caps, in all and per IP |
//! | [`throttle`] | per-address rate limits kept in the process: the public reads |
//! | [`read_cache`] | public reads computed at most once a second, one computation for concurrent misses |
//! | [`redis_watch`] | whether Redis answers now, probed on a connection of its own |
//! | [`embedded_redis`] | the private `redis-server` started when `REDIS_URL` is unset |
//! | [`precompress`] | the bundles' brotli and gzip copies served from `/pkg` |
//! | [`ops`] | the use cases the panel and the command line share, each audited |
//! | [`project_list`] | the generated Warrior HQ list, `auto_project`, recorded lifecycle changes |
//! | [`store::offload::offloader`] | moves done items, long queues' tails and the completion log to disk, under a lease |
//! | [`segment`] | the segment files those items live in: sorted, compressed, with a filter |
//! | [`blocked_bloom`] | blocked Bloom filters: layer geometry, where a hash lands, the in-memory filter |
//! | [`web`] | the HTTP plumbing every front door shares, and the middleware that answers first |
//! | [`gate`] | the one layer in front of each route group: counted, timed out, refused while Redis is down |
//! | [`http_metrics`] | this process's HTTP requests and their times by route group, for `/metrics` |
//! | [`script_metrics`] | this process's batched claim and done script calls: sizes, times, failures, for `/metrics` |
//! | [`fetch_meta`] | what a browser's fetch metadata (`Sec-Fetch-*`) says of a request |

pub mod admin;
pub mod api;
pub mod batcher;
pub mod blocked_bloom;
pub mod cli;
pub mod config;
pub mod embedded_redis;
pub mod fetch_meta;
pub mod fleet;
pub mod gate;
pub mod http_metrics;
pub mod hub;
pub mod keys;
pub mod limits;
pub mod openapi;
pub mod ops;
pub mod precompress;
pub mod project_list;
pub mod read_cache;
pub mod redis_watch;
pub mod routes;
pub mod script_metrics;
pub mod segment;
pub mod start;
pub mod state;
pub mod storage;
pub mod storage_metrics;
pub mod store;
pub mod throttle;
pub mod viewers;
pub mod web;
pub mod websocket;

pub use config::Config;
pub use routes::router;
pub use start::{start, Running, StartupReport};
pub use state::{App, AppState};
