//! Black-box tests of the HTTP API; modules mirror the route table.

mod api {
    mod admin_audit;
    mod admin_claims;
    mod admin_items;
    mod admin_log;
    mod admin_login;
    mod admin_projects;
    mod admin_sessions;
    mod admin_settings;
    mod admin_tokens;
    mod admin_users;
    mod admin_warrior;
    mod backfeed;
    mod binary;
    mod chaos;
    mod check;
    mod cli;
    mod cluster;
    mod cluster_failover;
    mod connections;
    mod contributors;
    mod crash;
    mod decay;
    mod downloaders;
    mod engine;
    mod faults;
    mod feed;
    mod fleet;
    mod fuzz;
    mod headers;
    mod hostile;
    mod hq;
    mod lifecycle;
    mod live;
    mod live_frames;
    mod pages;
    mod pipelines;
    mod processes;
    mod protocol;
    mod public;
    mod redis_full;
    mod refusals;
    mod scripts;
    mod start;
    mod warrior;
}
