#!/usr/bin/env bash
# Install what the cross-platform checks need (scripts/cross-check.sh),
# idempotently: Rust's std for Windows (MinGW) and both macOS targets, the
# MinGW C toolchain and Wine (Debian packages), and Zig as the C compiler
# for macOS (PyPI ziglang). Under CI=true anything missing afterwards fails
# the run; otherwise it is reported and the matching checks are skipped.
set -euo pipefail

targets=(x86_64-pc-windows-gnu aarch64-apple-darwin x86_64-apple-darwin)
installed="$(rustup target list --installed)"
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$installed" || rustup target add "$t"
done

need=()
command -v x86_64-w64-mingw32-gcc >/dev/null || need+=(gcc-mingw-w64-x86-64)
command -v wine >/dev/null || need+=(wine wine64)
if ((${#need[@]})); then
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo -n"
    if command -v apt-get >/dev/null; then
        $sudo apt-get update -qq || true
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" ||
            echo "install-cross: could not install ${need[*]}" >&2
    else
        echo "install-cross: no apt-get; install ${need[*]} by hand" >&2
    fi
fi

if ! python3 -m ziglang version >/dev/null 2>&1; then
    python3 -m pip install --quiet ziglang ||
        python3 -m pip install --quiet --break-system-packages ziglang ||
        echo "install-cross: could not install ziglang (pip install ziglang)" >&2
fi

missing=()
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=("x86_64-w64-mingw32-gcc (Debian gcc-mingw-w64-x86-64)")
command -v wine >/dev/null || missing+=("wine (Debian wine, wine64)")
python3 -m ziglang version >/dev/null 2>&1 || missing+=("zig (pip install ziglang)")
if ((${#missing[@]})); then
    echo "install-cross: missing: ${missing[*]}" >&2
    [[ "${CI:-}" == "true" ]] && exit 1
fi
echo "install-cross: ready (targets ${targets[*]}; $(x86_64-w64-mingw32-gcc --version | head -1); $(wine --version 2>/dev/null); zig $(python3 -m ziglang version))"
