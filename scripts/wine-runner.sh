#!/usr/bin/env bash
# Run a Windows binary (x86_64-pc-windows-gnu) under Wine: cargo's runner
# for that target (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER), so
# `cargo test --target x86_64-pc-windows-gnu` runs the tests under Wine.
#
# Wine 8 lacks ProcessPrng, which Rust's std needs at start-up; a small
# bcryptprimitives.dll providing it (scripts/windows/bcryptprimitives.c)
# is built once and put beside the executable.
#
# Wine state lives in MEMHOOK_WINEPREFIX (default: a directory of its own
# under ~/.cache), never in the user's ~/.wine.
set -euo pipefail
exe="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/windows/bcryptprimitives.c"
dll="$(dirname "$exe")/bcryptprimitives.dll"
if [[ ! -f "$dll" || "$src" -nt "$dll" ]]; then
    x86_64-w64-mingw32-gcc -shared -O2 -o "$dll.tmp.$$" "$src" -ladvapi32
    mv -f "$dll.tmp.$$" "$dll"
fi
export WINEPREFIX="${MEMHOOK_WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/memhook-wine}"
export WINEDEBUG="${WINEDEBUG:--all}"
# No desktop integration, no Mono/Gecko installer prompts.
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=;winemenubuilder.exe=d}"
if [[ ! -d "$WINEPREFIX" ]]; then
    mkdir -p "$WINEPREFIX"
    wineboot --init >/dev/null 2>&1 || true
fi
wine=wine
[[ -x /usr/lib/wine/wine64 ]] && wine=/usr/lib/wine/wine64
exec "$wine" "$exe" "$@"
