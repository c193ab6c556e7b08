//! Black-box tests of the HTTP API; modules mirror the route table.

mod api {
    mod admin;
    mod admin_actions;
    mod admin_extras;
    mod admin_more;
    mod admin_security;
    mod backfeed;
    mod binary;
    mod chaos;
    mod check;
    mod cli;
    mod cluster;
    mod cluster_failover;
    mod connections;
    mod crash;
    mod downloaders;
    mod engine;
    mod faults;
    mod feed;
    mod fuzz;
    mod headers;
    mod hostile;
    mod live;
    mod live_frames;
    mod pages;
    mod processes;
    mod protocol;
    mod public;
    mod redis_full;
    mod refusals;
    mod scripts;
    mod start;
    mod warrior;
}
