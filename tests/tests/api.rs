//! Black-box tests of the HTTP API; modules mirror the route table.

mod api {
    mod live;
    mod public;
    mod scripts;
    mod warrior;
}
