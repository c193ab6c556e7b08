//! The field suite: what the real clients send and what they accept, read from their newest
//! public sources. Each test names the source file and the commit it follows; when a client
//! moves, its test here moves with it, and docs/http.md's "Real clients" table says which version or
//! commit was checked.
//!
//! The checks a client makes of an answer are written once, in [`field::client`], as the client
//! makes them (seesaw's "exactly `{"items": [...]}`", `body.strip() == "OK"`, megawarc's
//! string id), so a test fails the way the client would.

mod field {
    mod client;
    mod grab_scripts;
    mod megawarc;
    mod seesaw_0_10_3;
    mod seesaw_today;
    mod warrior4;
    mod warrior_hq;
}
