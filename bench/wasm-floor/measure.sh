#!/usr/bin/env bash
# Builds the floor app as the tracker's Wasm is built (wasm-release settings, erase_components
# from the repository's .cargo/config.toml, wasm-bindgen, wasm-opt -Oz) and prints its gzip size.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PATH="$root/tools/binaryen/node_modules/.bin:$HOME/.cargo/bin:$PATH"
target="$root/target/wasm-floor"
cp -n "$root/Cargo.lock" "$here/Cargo.lock" 2>/dev/null || true
cd "$here"
CARGO_TARGET_DIR="$target" cargo build --quiet --release --lib --target wasm32-unknown-unknown
out="$target/out"
rm -rf "$out"
wasm-bindgen --target web --out-dir "$out" "$target/wasm32-unknown-unknown/release/wasm_floor.wasm"
wasm-opt -Oz --strip-debug --strip-producers --enable-bulk-memory --enable-nontrapping-float-to-int \
  "$out/wasm_floor_bg.wasm" -o "$out/floor.wasm"
echo "floor Wasm: $(gzip -9 -c "$out/floor.wasm" | wc -c) B gzip -9  (bench/wasm-floor/measure.sh)"
