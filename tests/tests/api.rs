//! Black-box tests of the HTTP API; modules mirror the route table.

mod api {
    mod backfeed;
    mod crash;
    mod engine;
    mod live;
    mod pages;
    mod protocol;
    mod public;
    mod scripts;
    mod warrior;
}
