#!/usr/bin/env bash
# Installs, idempotently, every tool the build and the tests need on a fresh machine.
# Quiet when everything is already there; exits non-zero with a clear message otherwise.
# Usage: scripts/install-tools.sh [build|test]   (test also installs chromium + chromedriver)
set -euo pipefail

WHAT="${1:-build}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/tools"
WASM_BINDGEN_VERSION=0.2.130
BINARYEN_VERSION=132.0.0
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$TOOLS/binaryen/node_modules/.bin:$CARGO_BIN:$PATH"

say() { echo "install-tools: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

apt_install() {
  # $@: debian packages; only when root and missing
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    die "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install -y ${missing[*]})"
  fi
  say "apt-get install ${missing[*]}"
  (apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null; }) ||
    die "apt-get install ${missing[*]} failed"
}

# Builds a crate from its crates.io source with one dependency pinned back (see TOOLCHAIN.md).
cargo_install_pinned() {
  local crate="$1" version="$2" dep="$3" dep_version="$4" bin="$5"
  if command -v "$bin" >/dev/null 2>&1 && "$bin" --version 2>/dev/null | grep -q "$version"; then
    return 0
  fi
  say "building $crate $version from source (takes a while, once per machine)"
  local work
  work="$(mktemp -d)"
  curl -sSfL "https://static.crates.io/crates/$crate/$crate-$version.crate" | tar -xz -C "$work" ||
    die "cannot download $crate $version from crates.io"
  (
    cd "$work/$crate-$version"
    cargo update -q -p "$dep" --precise "$dep_version"
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      cargo install -q --path . --locked --force
  ) || die "cargo install $crate $version failed"
  rm -rf "$work"
}

command -v cargo >/dev/null || die "cargo not found: install Rust with rustup first"
command -v npm >/dev/null || apt_install nodejs npm

rustup target list --installed 2>/dev/null | grep -q wasm32-unknown-unknown ||
  { say "rustup target add wasm32-unknown-unknown"; rustup target add wasm32-unknown-unknown >/dev/null; }

command -v redis-server >/dev/null || apt_install redis-server
# The tests' local Redis Cluster is formed with redis-cli --cluster create.
command -v redis-cli >/dev/null || apt_install redis-tools

if [ ! -x "$TOOLS/binaryen/node_modules/.bin/wasm-opt" ]; then
  say "npm install binaryen@$BINARYEN_VERSION"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/binaryen" "binaryen@$BINARYEN_VERSION" >/dev/null ||
    die "npm install binaryen failed"
fi

# The tests' S3-speaking server (object storage of segments, TRACKER_STORAGE=s3://...):
# s3s-fs, an S3 protocol server on a local directory built on the s3s library, from crates.io.
# 0.14.1 is the newest that builds on this toolchain (later ones need Rust 1.96).
S3S_FS_VERSION=0.14.1
install_s3s_fs() {
  if command -v s3s-fs >/dev/null 2>&1 && [ -f "$CARGO_BIN/.s3s-fs-$S3S_FS_VERSION" ]; then
    return 0
  fi
  say "building s3s-fs $S3S_FS_VERSION from crates.io (a few minutes, once per machine)"
  cargo install -q --locked --force "s3s-fs@$S3S_FS_VERSION" --features binary ||
    die "cargo install s3s-fs $S3S_FS_VERSION failed"
  touch "$CARGO_BIN/.s3s-fs-$S3S_FS_VERSION"
}

if [ "$WHAT" = test ]; then
  install_s3s_fs
  apt_install chromium chromium-driver
  if [ ! -d "$ROOT/end2end/node_modules/@playwright/test" ]; then
    say "npm ci (end2end: Playwright, using Debian's Chromium)"
    (cd "$ROOT/end2end" && npm ci --silent --no-audit --no-fund >/dev/null) || die "npm ci in end2end failed"
  fi
fi

cargo_install_pinned wasm-bindgen-cli "$WASM_BINDGEN_VERSION" webpki-roots 1.0.10 wasm-bindgen
