# The two commands of the README, and their parts.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := $(CURDIR)/tools/binaryen/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)

.PHONY: run test build test-build tools tools-test lint unit e2e bench chaos

## make run: install what is missing, build (release), serve on http://127.0.0.1:8080
run: tools build
	exec ./target/release/tracker serve

## make test: install what is missing, then lint, unit + integration tests, browser tests
test: tools-test lint test-build unit e2e

tools:
	@scripts/install-tools.sh build

tools-test:
	@scripts/install-tools.sh test

# The server, the public pages' Wasm and the admin panel's (same crate, `admin` feature), the
# stylesheet and assets, and the bundles' brotli and gzip copies that /pkg serves.
build:
	scripts/build-site.sh

lint:
	cargo fmt --all --check
	cargo clippy -p app -p server -p tests -p bench --all-targets -- -D warnings
	cargo clippy -p frontend --target wasm32-unknown-unknown -- -D warnings
	cargo clippy -p frontend --target wasm32-unknown-unknown --features admin -- -D warnings

# What the tests run: the tests and the tracker binary in one build of the tests' profile
# (every dependency compiled once for both; no release build of the server), and the site's
# Wasm bundles (the same code, built fast: profile `wasm-test`), stylesheet and assets.
TEST_BIN := $(CURDIR)/target/debug/tracker
test-build:
	cargo build --all-targets -p app -p server -p tests
	TRACKER=$(TEST_BIN) WASM_PROFILE=wasm-test scripts/build-site.sh

# The integration and browser tests run that binary (TRACKER_BIN); the offload, storage and
# log archive tests run again with their segments and archives in a real S3-speaking server
# (s3s-fs, tests/src/s3.rs).
unit:
	cargo build --all-targets -p app -p server -p tests
	TRACKER_BIN=$(TEST_BIN) cargo test -p app -p server -p tests
	TRACKER_TEST_STORAGE=s3 TRACKER_BIN=$(TEST_BIN) cargo test -p tests --test api -- offload storage admin_log::

e2e:
	cd end2end && TRACKER_BIN=$(TEST_BIN) npx playwright test

## make bench: the load generator (not part of make test); see bench/README.md
bench: tools build
	cargo run --release -p bench

## make chaos: kills under load, then proof that every item was done once (not part of make
## test; over 10 minutes); see bench/README.md
chaos: tools
	cargo build --release -p server -p bench
	./target/release/bench --chaos --items 1000000 --minutes 10 --warriors 200
