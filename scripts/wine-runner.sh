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
if [[ "${MEMHOOK_WINE_RETRY:-}" != 1 ]]; then
    exec "$wine" "$exe" "$@"
fi
# Test binaries (cross-check.sh sets MEMHOOK_WINE_RETRY=1; they read no
# stdin, so a second start sees what the first would have): the wineserver
# wine starts by itself exits 3 s after its last client, and a client that
# connects in that moment dies before the program runs with "wine client
# error: ... Connection reset by peer" (seen in a CI run). Such a start is
# retried, after waiting (bounded) for the dying server to be gone.
errf="$(mktemp "${TMPDIR:-/tmp}/memhook-wine-stderr.XXXXXX")"
trap 'rm -f "$errf"' EXIT
for attempt in 1 2 3; do
    set +e
    "$wine" "$exe" "$@" 2> >(tee "$errf" >&2)
    rc=$?
    set -e
    wait  # the tee above has written all it read
    if [[ $rc -eq 0 ]] || ! grep -q "wine client error" "$errf"; then
        exit "$rc"
    fi
    echo "wine-runner: wine could not reach its server (attempt $attempt of 3); retrying $exe" >&2
    timeout 20 wineserver -w 2>/dev/null || true
done
exit "$rc"
