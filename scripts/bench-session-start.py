#!/usr/bin/env python3
"""Session start with a briefing from a store of many sessions, against
`/bin/true` and against the same hook on an empty store, in one run.

Usage: scripts/bench-session-start.py [--keep-wal] [--instructions] MEMHOOK_BINARY [SESSIONS] [RECORDS_PER_SESSION] [RUNS]

--keep-wal leaves the WAL the import wrote (what this script measured
before 6a09815). --instructions counts the instructions of one session
start with the briefing under valgrind's callgrind instead of timing RUNS
(a steady figure on a noisy machine; needs valgrind).

Seeds a throw-away data dir through `memhook import` (the export format of
docs/team.md): SESSIONS sessions of the project being briefed, each with a
prompt, tool results of four families (one failing), edited and read files,
a stop and a session end; as many records again in another project. It
empties the store's WAL as the drainer does after each run. Then
runs the real Claude Code SessionStart payload through `memhook hook`
RUNS times, alternating with `/bin/true` and with the same hook against an
empty data dir, and reports each child's CPU (user + system) and peak RSS
from wait4(2). MEMHOOK_NO_HOOK_DELIVERY=1 keeps drainers out of the
figures (nothing is pending anyway). Uses only the standard library.
"""

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "agents", "claude-code", "2.1.328", "SessionStart-startup.json")


def records(project, sessions, per_session, t0):
    """Export lines for `sessions` sessions of `project`."""
    n = 0
    for s in range(sessions):
        sid = f"{project}-session-{s:04}"
        ms = t0 + s * 3_600_000
        def line(event, **kw):
            nonlocal n, ms
            n += 1
            ms += 1000
            sec, milli = divmod(ms, 1000)
            at = __import__("time").strftime("%Y-%m-%dT%H:%M:%S", __import__("time").gmtime(sec)) + f".{milli:03}Z"
            rec = {"v": 1, "key": f"{n:08x}{abs(hash(project)) % 16**8:08x}" + "0" * 16, "occurred_at": at,
                   "workspace": "default", "project": project, "agent": "claude-code", "event": event,
                   "native_event": event, "session_id": sid, "cwd": f"/home/dev/projects/{project}",
                   "subagent": False, "disposition": "keep", "files": [], "token_name": None}
            rec.update(kw)
            return json.dumps(rec)
        yield line("session-start", title="session start")
        yield line("user-prompt", title=f"Step {s}: make the parser robust", body=f"Step {s}: make the parser robust and run the tests")
        fams = [("file", "Read", "success"), ("file", "Edit", "success"), ("shell", "Bash", "success"), ("search-list", "Grep", "success")]
        for i in range(max(per_session - 4, 0)):
            fam, tool, outcome = fams[i % 4]
            failing = fam == "shell" and i + 4 >= per_session - 4
            ev = "post-tool-use-failure" if failing else "post-tool-use"
            files = [f"/home/dev/projects/{project}/src/pkg{s % 7}/mod{i % 23}.py"] if fam == "file" else []
            yield line(ev, tool_family=fam, tool_name=tool, tool_call_id=f"toolu_{n:06}",
                       outcome="error" if failing else outcome, title=f"{tool} ({fam}) {'error' if failing else outcome}",
                       body="error: Exit code 1\nFAILED tests/test_parser.py" if failing else "ok", files=files)
        yield line("stop", title="stop")
        yield line("session-end", title="session end")


def run(argv, env, cwd, stdin_bytes, before=None):
    """CPU seconds and peak RSS (KiB) of one child. The peak RSS comes from
    GNU time (/usr/bin/time -f %M) run around it, in a second run: a child
    of this script inherits the script's own RSS high-water mark at exec.
    `before`, if given, is called before each of the two runs."""
    if before:
        before()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    p.stdin.write(stdin_bytes)
    p.stdin.close()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{argv} failed: {status}")
    if before:
        before()
    t = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], input=stdin_bytes, env=env, cwd=cwd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    return ru.ru_utime + ru.ru_stime, int(t.stderr.decode().strip().splitlines()[-1])


def main():
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    unknown = flags - {"--keep-wal", "--instructions"}
    if unknown or not args:
        raise SystemExit(__doc__ if not unknown else f"unknown option {sorted(unknown)[0]}")
    binary = os.path.abspath(args[0])
    sessions = int(args[1]) if len(args) > 1 else 100
    per_session = int(args[2]) if len(args) > 2 else 40
    runs = int(args[3]) if len(args) > 3 else 100
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_MEMORY_", "MEMHOOK_"))}

    def home_env(home):
        env = dict(base_env, HOME=home, AI_MEMORY_DATA_DIR=os.path.join(home, "data"),
                   MEMHOOK_NO_HOOK_DELIVERY="1", MEMHOOK_START_BUDGET_MS="10000")
        cwd = os.path.join(home, "projects", "demo")
        os.makedirs(cwd, exist_ok=True)
        return env, cwd

    full = tempfile.mkdtemp(prefix="memhook-start-full-")
    empty = tempfile.mkdtemp(prefix="memhook-start-empty-")
    full_env, full_cwd = home_env(full)
    empty_env, empty_cwd = home_env(empty)
    dump = os.path.join(full, "seed.jsonl")
    t0 = 1_767_225_600_000  # 2026-01-01
    with open(dump, "w") as f:
        for project in ("demo", "other"):
            for l in records(project, sessions, per_session, t0):
                f.write(l + "\n")
    subprocess.run([binary, "import", dump], env=full_env, check=True, capture_output=True)
    # The WAL as a session start finds it: the drainer empties it after each
    # run (`wal_checkpoint(TRUNCATE)`), and `memhook import` does since
    # 6a09815. Builds before that left the imported 4 MB in the WAL, and
    # each session start then rebuilt the WAL's index from every frame.
    if "--keep-wal" not in flags:
        con = sqlite3.connect(os.path.join(full, "data", "store.sqlite3"))
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        con.close()
    subprocess.run([binary, "import", os.devnull], env=empty_env, check=True, capture_output=True)

    with open(FIXTURE) as f:
        payload = json.load(f)

    def start(cwd, i):
        p = dict(payload, cwd=cwd, session_id=f"bench-start-{i}")
        return json.dumps(p).encode()

    hook = [binary, "hook", "--agent", "claude-code"]
    if "--instructions" in flags:
        subprocess.run(hook, input=start(full_cwd, "warm"), env=full_env, cwd=full_cwd, capture_output=True, check=True)
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *hook],
                             input=start(full_cwd, "counted"), env=full_env, cwd=full_cwd, capture_output=True, check=True)
        ir = [l for l in out.stderr.decode().splitlines() if "Collected" in l]
        print(f"SessionStart with the briefing: {ir[-1].split(':')[-1].strip()} instructions "
              f"(WAL {'as the import left it' if '--keep-wal' in flags else 'emptied'})")
        return
    cpu = {"true": [], "empty": [], "full": []}
    rss = {"true": [], "empty": [], "full": []}
    for i in range(runs):
        for name, argv, env, cwd in (("true", ["/bin/true"], full_env, full_cwd),
                                     ("empty", hook, empty_env, empty_cwd),
                                     ("full", hook, full_env, full_cwd)):
            c, m = run(argv, env, cwd, start(cwd, i) if name != "true" else b"")
            cpu[name].append(c)
            rss[name].append(m)
    out = subprocess.run(hook, input=start(full_cwd, "last"), env=full_env, cwd=full_cwd, capture_output=True, check=True)
    text = json.loads(out.stdout).get("hookSpecificOutput", {}).get("additionalContext", "")
    load = os.getloadavg()[0]
    print(f"store: {sessions} sessions x {per_session} records in the project, as many in another; {runs} runs; load {load:.2f}")
    print(f"briefing: {len(text)} characters")
    t = statistics.median(cpu["true"])
    for name, label in (("true", "/bin/true"), ("empty", "SessionStart, empty store"), ("full", "SessionStart, briefing")):
        c = statistics.median(cpu[name])
        print(f"{label:<28} CPU median {c * 1000:6.2f} ms ({c / t:5.2f}x /bin/true)  peak RSS max {max(rss[name]) / 1024:5.2f} MiB")
    over = (statistics.median(cpu["full"]) - t) * 1000
    print(f"briefing session start costs {over:.2f} ms CPU over /bin/true "
          f"({(statistics.median(cpu['full']) - statistics.median(cpu['empty'])) * 1000:.2f} ms over the same hook on an empty store)")


if __name__ == "__main__":
    main()
