#!/usr/bin/env python3
"""Regenerate link/hot-text.ld: the functions a hook call runs, placed
together at the start of the binary's code by the linker (build.rs).

A hook process runs about 1,600 functions scattered over 7 MB of code;
each 64 KiB the kernel maps on a page fault then holds mostly code the hook
never runs, and every mapped page counts in its peak RSS. Placed together,
with every build of the same generic function they name, they take 1.2 MB
(docs/benchmarks.md, "The unwinder, the store's plans and hot code first").

How: build memhook without stripping symbols, run each hook event of the
real Claude Code fixtures once under valgrind's callgrind (a SessionStart
with a briefing from a small store first, then a prompt, tool calls, a stop),
and list every function that ran. The tool events come first: they are the
calls an agent makes most. Each name becomes a linker-script pattern for the
input section rustc and cc give that function (`-ffunction-sections`), with
every hash left out (`17h<hash>E` in legacy Rust names, a crate's
`Cs<hash>_` in v0 ones), so the list keeps matching across builds, build
profiles and toolchains until the code itself changes. A pattern that
matches nothing costs nothing; rerun this after large changes to the hot
path.

Needs valgrind. Usage: scripts/hot-text.py [UNSTRIPPED_BINARY]
(default: builds one into target/hot-text with CARGO_PROFILE_RELEASE_STRIP=none)
"""

import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures/agents/claude-code/2.1.328")
OUT = os.path.join(ROOT, "link/hot-text.ld")
# Most frequent first: an agent runs a pre and a post hook for every tool call.
EVENTS = [
    "PreToolUse-Bash",
    "PostToolUse-Read",
    "PostToolUse-Bash",
    "PostToolUse-Edit",
    "UserPromptSubmit",
    "Stop",
    "SessionStart-startup",
    "SessionEnd-other",
]
MARKER = "project = 'demo'\n[capture]\nignore_paths = ['secrets/**', '*.pem', '**/*.key', '**/.env']\n"


def build():
    env = dict(os.environ, CARGO_PROFILE_RELEASE_STRIP="none")
    subprocess.run(["cargo", "build", "--release", "--locked", "--target-dir",
                    os.path.join(ROOT, "target/hot-text")], cwd=ROOT, env=env, check=True)
    return os.path.join(ROOT, "target/hot-text/release/memhook")


def seed(binary, env, project):
    """A store with 20 sessions of `project`, so SessionStart composes a briefing."""
    spec_path = os.path.join(ROOT, "scripts/bench-session-start.py")
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_session_start", spec_path)
    bs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bs)
    dump = os.path.join(env["HOME"], "seed.jsonl")
    with open(dump, "w") as f:
        for line in bs.records(project, 20, 40, 1_767_225_600_000):
            f.write(line + "\n")
    subprocess.run([binary, "import", dump], env=env, check=True, capture_output=True)


def functions_run(binary, env, cwd, payload, out):
    """Names (mangled) of every function one hook call ran."""
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
                    binary, "hook", "--agent", "claude-code"],
                   input=payload, env=env, cwd=cwd, capture_output=True, check=True)
    names, objects, ran = {}, {}, []
    ours = False  # is the current `fn=` in memhook itself (not libc or the loader)?
    with open(out) as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
            if m:
                kind, ident, path = m.groups()
                if path:
                    objects[ident] = path
                if kind == "ob":
                    # valgrind names no object for code outside the `.text`
                    # it knows (this script's own `.text.hot`): "???".
                    path = objects[ident]
                    ours = path == "???" or os.path.realpath(path) == os.path.realpath(binary)
                continue
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
            if not m:
                continue
            kind, ident, name = m.groups()
            if name:
                names[ident] = name
            if kind == "fn" and ours:
                ran.append(names[ident])
    return ran


def pattern(name):
    """The input-section patterns for function `name`, hashes left out."""
    name = re.sub(r"'\d+$", "", name)  # callgrind's recursion marker
    if name.startswith("0x") or " " in name or "(" in name:
        return []
    if name.startswith("_ZN"):
        base = re.sub(r"17h[0-9a-f]{16}E.*$", "17h", name)
        return [f".text.{base}*"] if base != name else [f".text.{name}"]
    if name.startswith("_R"):
        base = re.sub(r"(\.llvm)?\.\d+$", "", name)
        return [".text." + re.sub(r"Cs[0-9A-Za-z]+_", "Cs*_", base) + "*"]
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
        return []
    # C (SQLite, compiled by cc with -ffunction-sections): GCC names a clone
    # `f.constprop.0` and its section after it.
    base = name.split(".")[0]
    return [f".text.{base}", f".text.{base}.*"]


def main():
    binary = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else build()
    tmp = tempfile.mkdtemp(prefix="memhook-hot-")
    home = os.path.join(tmp, "home")
    cwd = os.path.join(home, "projects", "demo")
    os.makedirs(cwd)
    with open(os.path.join(cwd, ".ai-memory.toml"), "w") as f:
        f.write(MARKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_MEMORY_", "MEMHOOK_"))}
    env.update(HOME=home, AI_MEMORY_DATA_DIR=os.path.join(tmp, "data"),
               MEMHOOK_NO_HOOK_DELIVERY="1", MEMHOOK_START_BUDGET_MS="10000")
    seed(binary, env, "demo")
    seen, patterns = set(), []
    for i, event in enumerate(EVENTS):
        with open(os.path.join(FIXTURES, event + ".json")) as f:
            payload = json.load(f)
        payload["cwd"] = cwd
        payload["session_id"] = "hot-text"
        for name in functions_run(binary, env, cwd, json.dumps(payload).encode(),
                                  os.path.join(tmp, f"{i}.callgrind")):
            for p in pattern(name):
                if p not in seen:
                    seen.add(p)
                    patterns.append(p)
    body = "\n".join(f"    *({p})" for p in patterns)
    with open(OUT, "w") as f:
        f.write(
            "/* The functions a hook call runs, first in the binary's code: see\n"
            "   build.rs and docs/benchmarks.md (\"The unwinder, the store's plans\n"
            "   and hot code first\").\n"
            "   Generated by scripts/hot-text.py; do not edit by hand. */\n"
            "SECTIONS\n{\n  .text.hot :\n  {\n" + body + "\n  }\n}\nINSERT BEFORE .text;\n")
    print(f"{OUT}: {len(patterns)} patterns from {len(EVENTS)} events")


if __name__ == "__main__":
    main()
