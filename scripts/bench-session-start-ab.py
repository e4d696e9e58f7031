#!/usr/bin/env python3
"""Session start with a briefing, before/after in one run: the real Claude
Code SessionStart payload through each BINARY (as agents run it:
`BINARY hook --agent claude-code`), alternating with /bin/true, call after
call, against one store of SESSIONS sessions (seeded as
bench-session-start.py seeds it; MEMHOOK_NO_HOOK_DELIVERY=1).

Each BINARY's directory is copied whole (so `memhook` finds the siblings it
hands session start to) into two temporary directories on the file system
of /work/bench/tmp or TMPDIR, for two page-cache states, as
bench-ab.py does: "written" (just copied, as after `cargo install`) and
"read back" (cached pages dropped with posix_fadvise(DONTNEED), as after a
reboot). The kernel maps a file's page-cache folios differently in the two
states, and peak RSS differs by up to 1 MiB between them.

Reports each child's CPU (user + system, from wait4) and peak RSS (from
/usr/bin/time -f %M, a separate call of the same kind), medians and max.

With --miss, the briefings kept ready (<data dir>/briefings) are removed
before every call, so each session start composes its briefing from the
store (docs/architecture.md, "Briefings kept ready"); without it, a
binary that keeps briefings composes only at its first call (the store
does not change: nothing is delivered).

Usage: scripts/bench-session-start-ab.py [--runs 40] [--sessions 100] [--miss] BINARY [BINARY ...]
"""

import argparse
import importlib.util
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bss", os.path.join(HERE, "bench-session-start.py"))
bss = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bss)


def copies(binary, tmp, i):
    """The two copies of `binary`'s directory: (label, path) pairs."""
    out = []
    src = os.path.dirname(os.path.abspath(binary))
    for state in ("written", "read-back"):
        d = os.path.join(tmp, f"{i}-{state}")
        os.mkdir(d)
        for f in os.listdir(src):
            p = os.path.join(src, f)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                shutil.copy2(p, os.path.join(d, f))
                if state == "read-back":
                    fd = os.open(os.path.join(d, f), os.O_RDONLY)
                    os.fsync(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    os.close(fd)
        out.append((f"{os.path.basename(src)}/{os.path.basename(binary)} {state}", os.path.join(d, os.path.basename(binary))))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--miss", action="store_true",
                    help="remove the kept briefings before every call")
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="memhook-start-ab-")
    home = os.path.join(tmp, "home")
    cwd = os.path.join(home, "projects", "demo")
    os.makedirs(cwd)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_MEMORY_", "MEMHOOK_"))}
    env.update(HOME=home, AI_MEMORY_DATA_DIR=os.path.join(home, "data"),
               MEMHOOK_NO_HOOK_DELIVERY="1", MEMHOOK_START_BUDGET_MS="10000")
    dump = os.path.join(tmp, "seed.jsonl")
    with open(dump, "w") as f:
        for project in ("demo", "other"):
            for line in bss.records(project, a.sessions, 40, 1_767_225_600_000):
                f.write(line + "\n")
    # The last BINARY (the newest) writes the store, so a build that keeps
    # briefings ready finds the store's generation it writes.
    subprocess.run([a.binaries[-1], "import", dump], env=env, check=True, capture_output=True)
    con = sqlite3.connect(os.path.join(home, "data", "store.sqlite3"))
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    con.close()
    with open(bss.FIXTURE) as f:
        payload = json.load(f)
    payload.update(cwd=cwd, session_id="bench-start-ab")
    stdin = json.dumps(payload).encode()

    def forget_kept():
        if a.miss:
            shutil.rmtree(os.path.join(home, "data", "briefings"), ignore_errors=True)

    runs = [("/bin/true", "/bin/true")]
    for i, b in enumerate(a.binaries):
        runs += copies(b, tmp, i)
    cpu = {label: [] for label, _ in runs}
    rss = {label: [] for label, _ in runs}
    chars = None
    for _ in range(a.runs):
        for label, path in runs:
            argv = [path] if path == "/bin/true" else [path, "hook", "--agent", "claude-code"]
            c, m = bss.run(argv, env, cwd, b"" if path == "/bin/true" else stdin, before=forget_kept)
            cpu[label].append(c)
            rss[label].append(m)
        if chars is None:
            out = subprocess.run([runs[1][1], "hook", "--agent", "claude-code"], input=stdin, env=env, cwd=cwd, capture_output=True, check=True)
            chars = len(json.loads(out.stdout).get("hookSpecificOutput", {}).get("additionalContext", ""))
    base = statistics.median(cpu["/bin/true"])
    kept = "every call composes (--miss)" if a.miss else "briefings kept ready are used"
    print(f"{a.runs} rounds, {a.sessions} sessions x 40 records in the project, as many in another; briefing {chars} characters; {kept}; load {os.getloadavg()[0]:.1f}")
    print()
    print("| binary | CPU | CPU ratio | peak RSS median | peak RSS max |")
    print("|---|---|---|---|---|")
    for label, _ in runs:
        c = statistics.median(cpu[label])
        print(f"| `{label}` | {c * 1000:.2f} ms | {c / base:.2f}x | {statistics.median(rss[label]) / 1024:.2f} MiB | {max(rss[label]) / 1024:.2f} MiB |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
