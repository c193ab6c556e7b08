#!/usr/bin/env bash
# Builds everything `make run` serves, with plain cargo (no cargo-leptos to install):
#   - the server, `target/release/tracker` (release profile, `ssr`);
#   - the two Wasm bundles of the `frontend` crate for wasm32, in profile `wasm-release`, each
#     through wasm-bindgen (`--target web`) and `wasm-opt -Oz`: the public pages' (`tracker`) and,
#     with the crate's `admin` feature, the panel's (`admin`), both into `target/site/pkg`;
#   - the stylesheet (`style/main.css` to `pkg/tracker.css`) and the assets (`public/` to the site
#     root);
#   - the bundles' brotli and gzip copies, by `tracker precompress`.
# The page's hydration script names the Wasm after LEPTOS_OUTPUT_NAME (`tracker`, set for every
# cargo run in .cargo/config.toml), so the names here must stay the same.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/tools/binaryen/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
site="$root/target/site"
pkg="$site/pkg"
front="$root/target/front"

# TRACKER: a tracker binary built already (`make test` builds it with the tests, in their
# profile, sharing their dependencies); by default the release build made here.
if [ -z "${TRACKER:-}" ]; then
  cargo build --release --package=server --bin=tracker
  TRACKER="$root/target/release/tracker"
fi

# WASM_PROFILE: `wasm-release` (the default: small, LTO, then wasm-opt -Oz) or `wasm-test`
# (`make test`: the same code built fast, without wasm-opt).
wasm_profile="${WASM_PROFILE:-wasm-release}"

# $1: the bundle's name; $2: the crate's features.
wasm() {
  local name="$1" features="$2"
  cargo build --package=frontend --lib --target-dir="$front" --target=wasm32-unknown-unknown \
    --no-default-features --features="$features" --profile="$wasm_profile"
  wasm-bindgen --target=web --out-name="$name" --out-dir="$pkg" \
    "$front/wasm32-unknown-unknown/$wasm_profile/frontend.wasm"
  mv "$pkg/${name}_bg.wasm" "$pkg/$name.wasm"
  if [ "$wasm_profile" = wasm-release ]; then
    wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int "$pkg/$name.wasm" -o "$pkg/$name.wasm"
  fi
  echo "$name Wasm: $(gzip -9 -c "$pkg/$name.wasm" | wc -c) B gzip -9"
}
mkdir -p "$pkg"
wasm tracker hydrate
wasm admin hydrate,admin
cp style/main.css "$pkg/tracker.css"
cp -r public/. "$site/"
"$TRACKER" precompress "$pkg"
