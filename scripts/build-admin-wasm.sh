#!/usr/bin/env bash
# Builds the admin panel's Wasm bundle (`target/site/pkg/admin.js`, `admin.wasm`) as cargo-leptos
# builds the public one (`tracker`): the `frontend` crate with its `admin` feature, in cargo-leptos's
# target directory and profile (the dependencies it compiled are reused), then wasm-bindgen and
# `wasm-opt -Oz`. Run after `cargo leptos build --release` (`make build` does both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/tools/binaryen/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# The environment cargo-leptos gives its front build, so no crate is rebuilt for a difference.
export LEPTOS_OUTPUT_NAME=tracker LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_PKG_DIR=pkg \
  LEPTOS_SITE_ADDR=127.0.0.1:8080 LEPTOS_RELOAD_PORT=3001 LEPTOS_LIB_DIR=frontend \
  LEPTOS_BIN_DIR=server LEPTOS_JS_MINIFY=true LEPTOS_HASH_FILES=false
front="$root/target/front"
cargo build --package=frontend --lib --target-dir="$front" --target=wasm32-unknown-unknown \
  --no-default-features --features=hydrate,admin --profile=wasm-release
pkg="$root/target/site/pkg"
mkdir -p "$pkg"
wasm-bindgen --target=web --out-name=admin --out-dir="$pkg" \
  "$front/wasm32-unknown-unknown/wasm-release/frontend.wasm"
mv "$pkg/admin_bg.wasm" "$pkg/admin.wasm"
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int "$pkg/admin.wasm" -o "$pkg/admin.wasm"
echo "admin Wasm: $(gzip -9 -c "$pkg/admin.wasm" | wc -c) B gzip -9"
