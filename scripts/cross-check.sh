#!/usr/bin/env bash
# Windows and macOS, built and tested here (issue 27; DESIGN §14):
# - Windows (x86_64-pc-windows-gnu, MinGW): the whole workspace builds
#   with no warnings, clippy -D warnings, the unit tests of memhook-core,
#   memhook-delivery, memhook-hook, memhook-store, memhook-sinks and memhook
#   (crates/cli, library and binaries) run under Wine, and the binaries end
#   to end under Wine (scripts/wine-e2e.sh). Not memhook-server's or
#   memhook-store-pg's (PostgreSQL, network).
# - macOS (aarch64/x86_64-apple-darwin): cargo check and clippy -D warnings
#   with Zig as the C compiler. Linking needs Apple's SDK, absent here, so
#   nothing macOS is run.
# Needs scripts/install-cross.sh first. Any failure fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
here="$PWD/scripts"
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$here/wine-runner.sh"
export CC_aarch64_apple_darwin="$here/macos/cc-aarch64.sh"
export CC_x86_64_apple_darwin="$here/macos/cc-x86_64.sh"
win=x86_64-pc-windows-gnu
jobs=(); [[ -n "${CARGO_BUILD_JOBS:-}" ]] && jobs=(-j "$CARGO_BUILD_JOBS")

echo "== Windows: build (whole workspace; clippy below fails on any warning)"
cargo build "${jobs[@]}" --locked --target "$win" --workspace --bins
echo "== Windows: clippy"
cargo clippy "${jobs[@]}" --locked --target "$win" --workspace -- -D warnings
echo "== Windows: unit tests under Wine"
MEMHOOK_WINE_RETRY=1 cargo test "${jobs[@]}" --locked --target "$win" -p memhook-core -p memhook-delivery -p memhook-hook -p memhook-store -p memhook-sinks -p memhook --lib --bins
echo "== Windows: the binaries end to end under Wine"
bash "$here/wine-e2e.sh" "${CARGO_TARGET_DIR:-target}/$win/debug"

for t in aarch64-apple-darwin x86_64-apple-darwin; do
    echo "== macOS $t: check and clippy (Zig as the C compiler; no SDK, no link)"
    cargo check "${jobs[@]}" --locked --target "$t" --workspace
    cargo clippy "${jobs[@]}" --locked --target "$t" --workspace -- -D warnings
done
echo "cross-check: all passed"
