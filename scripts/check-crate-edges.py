#!/usr/bin/env python3
"""Fail when the crate graph breaks the architecture (docs/architecture.md).

Two rules, read from `cargo metadata` (the resolved graph, normal
dependencies only, every target platform):

1. each memhook crate depends only on the memhook crates it may
   (data flows one way: core -> delivery -> hook is the per-event path;
   store, sinks, store-pg and server sit beside it, the `memhook` crate on
   top);
2. the per-event crates (core, delivery, hook) reach no crate of the
   store (SQLite), TLS, server, PostgreSQL, async runtime, installer or
   argument-parser kind, however deep.

Usage: python3 scripts/check-crate-edges.py [--manifest-path PATH] [--unlocked]
Exit 0 when both hold, 1 with one line per broken edge otherwise.
"""
import json
import subprocess
import sys

# Which memhook crates each memhook crate may depend on.
ALLOWED = {
    "memhook-core": set(),
    "memhook-delivery": {"memhook-core"},
    "memhook-hook": {"memhook-core", "memhook-delivery"},
    "memhook-store": {"memhook-core"},
    "memhook-sinks": {"memhook-core", "memhook-store", "memhook-delivery"},
    "memhook-store-pg": {"memhook-core", "memhook-store"},
    "memhook-server": {
        "memhook-core", "memhook-store", "memhook-store-pg", "memhook-delivery", "memhook-sinks",
    },
    "memhook": {
        "memhook-core", "memhook-store", "memhook-store-pg", "memhook-delivery",
        "memhook-sinks", "memhook-hook", "memhook-server",
    },
}

# The per-event path: what `memhook hook` and its drainer are built from.
PER_EVENT = ["memhook-core", "memhook-delivery", "memhook-hook"]

# Crates the per-event path must never reach (exact names or prefixes).
FORBIDDEN_PREFIXES = (
    "postgres", "tokio", "clap", "jsonc-parser", "toml_edit", "tiny_http",
    "rusqlite", "libsqlite3", "ureq", "rustls", "ring",
    "memhook-server", "memhook-store", "memhook-sinks",
)
FORBIDDEN_EXACT = {"memhook"}


def main():
    args = ["cargo", "metadata", "--format-version", "1"]
    # --unlocked: let cargo update Cargo.lock (to try an edge on a branch).
    if "--unlocked" not in sys.argv:
        args.append("--locked")
    if "--manifest-path" in sys.argv:
        args += ["--manifest-path", sys.argv[sys.argv.index("--manifest-path") + 1]]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"check-crate-edges: `{' '.join(args)}` failed:\n{run.stderr}", file=sys.stderr)
        sys.exit(2)
    meta = json.loads(run.stdout)
    names = {p["id"]: p["name"] for p in meta["packages"]}
    deps = {}
    for node in meta["resolve"]["nodes"]:
        normal = set()
        for d in node["deps"]:
            if any(k["kind"] in (None, "normal") for k in d["dep_kinds"]):
                normal.add(d["pkg"])
        deps[node["id"]] = normal
    by_name = {names[i]: i for i in deps if names[i] in ALLOWED}
    problems = []
    for crate, allowed in ALLOWED.items():
        if crate not in by_name:
            problems.append(f"{crate}: not in the workspace")
            continue
        for d in deps[by_name[crate]]:
            n = names[d]
            if n.startswith("memhook") and n not in allowed:
                problems.append(f"{crate} -> {n}: a forbidden edge between memhook crates")
    for crate in PER_EVENT:
        if crate not in by_name:
            continue
        seen, stack, parent = set(), [by_name[crate]], {}
        while stack:
            cur = stack.pop()
            for d in deps.get(cur, ()):
                if d in seen:
                    continue
                seen.add(d)
                parent[d] = cur
                stack.append(d)
        for d in sorted(seen, key=lambda i: names[i]):
            n = names[d]
            if n in FORBIDDEN_EXACT or n.startswith(FORBIDDEN_PREFIXES):
                path, cur = [n], d
                while cur in parent:
                    cur = parent[cur]
                    path.append(names[cur])
                problems.append(
                    f"{crate} reaches {n} ({' -> '.join(reversed(path))}): "
                    "the per-event path must not"
                )
    for p in problems:
        print(f"check-crate-edges: {p}", file=sys.stderr)
    if not problems:
        print(f"check-crate-edges: {len(ALLOWED)} crates, no forbidden edge")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
