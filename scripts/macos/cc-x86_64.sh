#!/usr/bin/env bash
# C compiler for the x86_64-apple-darwin cross-check: Zig's clang with its
# bundled macOS headers (PyPI ziglang). Enough for cargo check/clippy
# (SQLite's and ring's C compile); linking a binary needs Apple's SDK,
# absent here. cc-rs's own --target=arm64-apple-macosx is dropped (Zig
# spells the target its own way).
args=()
for a in "$@"; do
    case "$a" in
    --target=*) ;;
    *) args+=("$a") ;;
    esac
done
exec python3 -m ziglang cc -target x86_64-macos "${args[@]}"
