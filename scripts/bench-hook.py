#!/usr/bin/env python3
"""Hook benchmarks against /bin/true in the same run.

Two modes:

--mode isolated (the default): one call at a time, the drainer kept out.
For each configuration it alternates one /bin/true and one hook run. A
small C launcher (scripts/bench-hook-launch.c, compiled on first use) forks
each child, pipes the payload to its stdin and reads the child's own CPU
time (user+sys) and peak RSS from wait4(2); wall time is spawn to reap.
Every hook run sees the same state: the record it spooled is deleted
between runs (as a drainer would), outside the measurement. The script holds the run lock, so the hook
starts no drainer (as when one is already on duty).

--mode session: what an agent pays. (1) A 503-event Claude Code session
(1 SessionStart, 20 prompts, 240 PreToolUse/PostToolUse pairs, Stop,
SessionEnd, built from the real payloads in fixtures/agents/) replayed one
call after another with default delivery, against the same replay of
/bin/true, alternating rounds. scripts/bench-session-replay.c runs each
replay as a child subreaper, so the detached drainers the hooks start are
reaped by it: CPU includes them (RUSAGE_CHILDREN). It reports the replay's
wall time, all CPU, the time from the last call until every kept event is
in the store (`counters/store.json` says delivered), the processes still
alive 5 s after the last call and the peak RSS. (2) One call, spool only
(MEMHOOK_NO_HOOK_DELIVERY=1), against /bin/true, with 0 records pending,
with about 10,000 pending (the spool's cap less the runs: the records the
hook adds are kept) and with 0 pending after 10,000 were drained (an ext4
directory keeps its size).

Usage: scripts/bench-hook.py [--bin target/release/memhook] [--runs 300]
       scripts/bench-hook.py --mode session [--bin ...] [--rounds 3] [--runs 300]
Prints Markdown tables (medians) ready for docs/benchmarks.md.
"""

import argparse
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "fixtures/agents/claude-code/2.1.328/PostToolUse-Read.json")


def patterns(n, worst):
    """A realistic mix: mostly directory exclusions, a few `**/` globs
    whose literal prefix is the project root (so they get compiled).
    `worst`: every pattern has to be compiled and matched."""
    if worst:
        return [f"**/*.secret{i}" for i in range(n)]
    pats = ["secrets/**", "*.pem", "**/*.key", "docs/adr/**", "~/.ssh/**", "**/.env"]
    i = 0
    while len(pats) < n:
        pats.append(f"vendor/private{i}/**" if i % 2 else f"build/out{i}/*.log")
        i += 1
    return pats[:n]


def payload(project, size):
    p = json.load(open(FIXTURE))
    p["cwd"] = project
    p["tool_input"]["file_path"] = os.path.join(project, "src/app.py")
    p["tool_response"]["file"]["filePath"] = os.path.join(project, "src/app.py")
    p["tool_response"]["file"]["content"] = ""
    base = len(json.dumps(p).encode())
    p["tool_response"]["file"]["content"] = "x = 1  # padding\n" * max(0, (size - base) // 17)
    body = json.dumps(p).encode()
    return body + b" " * max(0, size - len(body))


LAUNCH_SRC = os.path.join(ROOT, "scripts/bench-hook-launch.c")


def launcher():
    exe = os.path.join(tempfile.gettempdir(), "memhook-bench-launch")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(LAUNCH_SRC):
        subprocess.run(["cc", "-O2", "-o", exe, LAUNCH_SRC], check=True)
    return exe


def run_once(argv, payload_file, env, faults=False):
    """CPU ms, wall ms, peak RSS MiB of one child (and its page faults)."""
    out = subprocess.run([launcher(), payload_file] + argv, env=env,
                         capture_output=True, check=True).stdout.split()
    cpu_us, wall_us, rss_kib, status, flt = (int(x) for x in out)
    assert status == 0, argv
    if faults:
        return cpu_us / 1e3, wall_us / 1e3, rss_kib / 1024.0, flt
    return cpu_us / 1e3, wall_us / 1e3, rss_kib / 1024.0


def spool_only(tmp, fixture=None):
    """The spool-only call of bench-ab.py and bench-floor.py, set up in
    `tmp`: a project whose marker has 16 patterns, a data dir, the
    environment (MEMHOOK_NO_HOOK_DELIVERY=1: no drainer, the records stay
    in the spool) and the payload file (the padded Read of `payload`, or
    the real `fixture` with its `/home/dev/proj` made the project).
    Returns (env, payload file)."""
    home = os.path.join(tmp, "home")
    project = os.path.join(home, "proj")
    os.makedirs(os.path.join(project, "src"))
    pats = ", ".join(f"'{p}'" for p in patterns(16, False))
    with open(os.path.join(project, ".ai-memory.toml"), "w") as f:
        f.write(f"project = 'proj'\n[capture]\nignore_paths = [{pats}]\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AI_MEMORY_") and not k.startswith("MEMHOOK_")}
    env.update(HOME=home, AI_MEMORY_DATA_DIR=os.path.join(tmp, "data"),
               MEMHOOK_NO_HOOK_DELIVERY="1")
    payload_file = os.path.join(tmp, "payload.json")
    with open(payload_file, "wb") as f:
        if fixture:
            with open(fixture) as fx:
                f.write(fx.read().replace("/home/dev/proj", project).encode())
        else:
            f.write(payload(project, 2048))
    return env, payload_file


def bench(binary, n_patterns, size, runs, worst=False):
    tmp = tempfile.mkdtemp(prefix="memhook-bench-")
    try:
        home = os.path.join(tmp, "home")
        project = os.path.join(home, "proj")
        os.makedirs(os.path.join(project, "src"))
        with open(os.path.join(project, ".ai-memory.toml"), "w") as f:
            if n_patterns:
                pats = ", ".join(f"'{p}'" for p in patterns(n_patterns, worst))
                f.write(f"project = 'proj'\n[capture]\nignore_paths = [{pats}]\n")
            else:
                f.write("project = 'proj'\n")
        data = os.path.join(tmp, "data")
        # Hold the run lock for the whole run: each hook then finds a
        # drainer on duty and starts none (one open + one lock attempt), so
        # no drainer competes with the measurement or empties the spool.
        # (Builds before drain.run.lock looked at drain.lock: hold both.)
        os.makedirs(data, mode=0o700)
        locks = [open(os.path.join(data, n), "a") for n in ("drain.run.lock", "drain.lock")]
        for lock in locks:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AI_MEMORY_")}
        env.update(HOME=home, AI_MEMORY_DATA_DIR=data)
        body = payload(project, size)
        payload_file = os.path.join(tmp, "payload.json")
        with open(payload_file, "wb") as f:
            f.write(body)
        empty_file = os.path.join(tmp, "empty")
        open(empty_file, "wb").close()
        argv = [binary, "hook", "--agent", "claude-code", "--event", "PostToolUse"]
        # Sanity: the event is kept and enqueued.
        out = subprocess.run(argv + ["--check-capture"], input=body, capture_output=True, env=env)
        decision = json.loads(out.stdout)
        assert decision["disposition"] == "keep", decision
        true_cpu, true_wall, true_rss, hook_cpu, hook_wall, hook_rss = [], [], [], [], [], []
        for i in range(runs + 5):
            c, w, r = run_once(["/bin/true"], empty_file, env)
            hc, hw, hr = run_once(argv, payload_file, env)
            spool = os.path.join(data, "spool")
            done = [x for x in os.listdir(spool) if x.endswith(".json")]
            assert len(done) == 1, done
            # What a drainer does: delete the delivered file, keep the dirs.
            for x in done:
                os.unlink(os.path.join(spool, x))
            if i < 5:
                continue  # warm-up
            true_cpu.append(c); true_wall.append(w); true_rss.append(r)
            hook_cpu.append(hc); hook_wall.append(hw); hook_rss.append(hr)
        med = statistics.median
        return {
            "patterns": n_patterns, "worst": worst, "size": size,
            "decision": decision["disposition"],
            "true_cpu": med(true_cpu), "true_wall": med(true_wall),
            "hook_cpu": med(hook_cpu), "hook_wall": med(hook_wall),
            "hook_rss": max(hook_rss), "true_rss": max(true_rss),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- session mode

AGENT_DIR = os.path.join(ROOT, "fixtures/agents/claude-code/2.1.328")
FIXTURE_CWD = "/home/dev/projects/demo"
TOOLS = ["Bash", "Edit", "Glob", "Grep", "Read", "Write", "NotebookEdit",
         "TaskCreate", "TaskUpdate", "ToolSearch", "Agent", "Read-notebook"]
PROMPTS, TOOLS_PER_PROMPT = 20, 12
REPLAY_SRC = os.path.join(ROOT, "scripts/bench-session-replay.c")
# How long after the last call the replay counts memhook processes left.
LINGER_CHECK_MS = 5000


def replay_tool():
    exe = os.path.join(tempfile.gettempdir(), "memhook-bench-replay")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(REPLAY_SRC):
        subprocess.run(["cc", "-O2", "-o", exe, REPLAY_SRC], check=True)
    return exe


def fixture(name, project, n):
    """A fixture payload moved into `project`, its ids made unique by `n`."""
    text = open(os.path.join(AGENT_DIR, name)).read().replace(FIXTURE_CWD, project)
    p = json.loads(text)
    if "tool_use_id" in p:
        p["tool_use_id"] = f"toolu_bench_{n:04d}"
    return p


def session_events(project):
    """(native event, payload) for one 503-event session."""
    ev = [("SessionStart", fixture("SessionStart-startup.json", project, 0))]
    n = 0
    for i in range(PROMPTS):
        p = fixture("UserPromptSubmit.json" if i % 2 == 0 else "UserPromptSubmit-2.json", project, 0)
        p["prompt"] = f"{p['prompt']} (step {i})"
        ev.append(("UserPromptSubmit", p))
        for j in range(TOOLS_PER_PROMPT):
            tool = TOOLS[(i * TOOLS_PER_PROMPT + j) % len(TOOLS)]
            n += 1
            ev.append(("PreToolUse", fixture(f"PreToolUse-{tool}.json", project, n)))
            ev.append(("PostToolUse", fixture(f"PostToolUse-{tool}.json", project, n)))
    ev.append(("Stop", fixture("Stop.json", project, 0)))
    ev.append(("SessionEnd", fixture("SessionEnd-other.json", project, 0)))
    assert len(ev) == 503, len(ev)
    return ev


def session_setup(tmp, n_patterns=16):
    """A home, a project with a 16-pattern marker, a data dir, the env."""
    home = os.path.join(tmp, "home")
    project = os.path.join(home, "projects", "demo")
    os.makedirs(os.path.join(project, "src"))
    pats = ", ".join(f"'{p}'" for p in patterns(n_patterns, False))
    with open(os.path.join(project, ".ai-memory.toml"), "w") as f:
        f.write(f"project = 'demo'\n[capture]\nignore_paths = [{pats}]\n")
    data = os.path.join(tmp, "data")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AI_MEMORY_") and not k.startswith("MEMHOOK_")}
    env.update(HOME=home, AI_MEMORY_DATA_DIR=data)
    return project, data, env


def write_replay(tmp, project, binary):
    """The replay list file for `binary` (None: /bin/true)."""
    lines = []
    for i, (native, p) in enumerate(session_events(project)):
        pf = os.path.join(tmp, f"ev{i:03d}.json")
        with open(pf, "w") as f:
            json.dump(p, f)
        argv = ["/bin/true"] if binary is None else \
            [binary, "hook", "--event", native, "--agent", "claude-code"]
        lines.append("\t".join([pf] + argv))
    path = os.path.join(tmp, "replay.tsv" if binary else "replay-true.tsv")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def run_replay(list_file, env, done_file="-", expected=0):
    out = subprocess.run([replay_tool(), list_file, str(LINGER_CHECK_MS), done_file, str(expected)],
                         env=env, capture_output=True, check=True, text=True).stdout
    r = {k: int(v) for k, v in (l.split("=") for l in out.split())}
    assert r["failed"] == 0, r
    return r


def kept_count(binary):
    """How many of the session's events the hook keeps (spool only)."""
    tmp = tempfile.mkdtemp(prefix="memhook-bench-")
    try:
        project, data, env = session_setup(tmp)
        env["MEMHOOK_NO_HOOK_DELIVERY"] = "1"
        run_replay(write_replay(tmp, project, binary), env)
        return len([x for x in os.listdir(os.path.join(data, "spool")) if x.endswith(".json")])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def store_count(data):
    import sqlite3
    db = sqlite3.connect(os.path.join(data, "store.sqlite3"))
    try:
        # `record_rows` since schema 12 (`records` is then a view that
        # needs memhook's SQL functions).
        table = ("record_rows" if db.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'record_rows'").fetchone() else "records")
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        db.close()


def replay_rounds(binary, rounds):
    expected = kept_count(binary)
    rows = []
    for _ in range(rounds):
        tmp = tempfile.mkdtemp(prefix="memhook-bench-")
        try:
            project, data, env = session_setup(tmp)
            t = run_replay(write_replay(tmp, project, None), env)
            h = run_replay(write_replay(tmp, project, binary), env,
                           os.path.join(data, "counters", "store.json"), expected)
            stored = store_count(data)
            assert stored == expected, (stored, expected)
            rows.append((t, h))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return expected, rows


def prefill(data, env, binary, body, n):
    """`n` pending records as the hook leaves them: one real entry copied
    `n` times under spool names, and one counted slot each in the ledger."""
    argv = [binary, "hook", "--agent", "claude-code", "--event", "PostToolUse"]
    subprocess.run(argv, input=body, env=dict(env, MEMHOOK_NO_HOOK_DELIVERY="1"),
                   capture_output=True, check=True)
    spool = os.path.join(data, "spool")
    (first,) = [x for x in os.listdir(spool) if x.endswith(".json")]
    entry = open(os.path.join(spool, first), "rb").read()
    os.unlink(os.path.join(spool, first))
    for i in range(n):
        fd = os.open(os.path.join(spool, f"1700000000000-{i:010d}-00000000-abcd.json"),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, entry)
        os.close(fd)
    with open(os.path.join(data, "counters", "store.enqueued"), "ab") as f:
        f.write(b"." * n)
    # Builds with a spool mark (counters/spool.mark) count the directory
    # once without it, in the warm-up calls, and note what they found.
    try:
        os.unlink(os.path.join(data, "counters", "spool.mark"))
    except FileNotFoundError:
        pass
    os.sync()


def per_call(binary, runs, pending, drained_before=False):
    """Spool-only calls (no drainer) with `pending` records waiting; the
    records the measured calls add stay (no drainer runs). With
    `drained_before`, the spool held 10,000 records that were deleted first."""
    tmp = tempfile.mkdtemp(prefix="memhook-bench-")
    try:
        env, payload_file = spool_only(tmp)
        data = env["AI_MEMORY_DATA_DIR"]
        with open(payload_file, "rb") as f:
            body = f.read()
        empty_file = os.path.join(tmp, "empty")
        open(empty_file, "wb").close()
        if drained_before:
            prefill(data, env, binary, body, 10_000)
            drain = subprocess.run([binary, "drain"], env=env, capture_output=True, text=True)
            assert drain.returncode == 0, drain.stderr
        if pending:
            prefill(data, env, binary, body, pending)
        argv = [binary, "hook", "--agent", "claude-code", "--event", "PostToolUse"]
        tc, tw, hc, hw, hr = [], [], [], [], []
        for i in range(runs + 5):
            c, w, _ = run_once(["/bin/true"], empty_file, env)
            x, y, r = run_once(argv, payload_file, env)
            if i >= 5:
                tc.append(c); tw.append(w); hc.append(x); hw.append(y); hr.append(r)
        spool = os.path.join(data, "spool")
        have = len([x for x in os.listdir(spool) if x.endswith(".json")])
        assert have == pending + runs + 5, (have, pending, runs)
        med = statistics.median
        return dict(true_cpu=med(tc), true_wall=med(tw), hook_cpu=med(hc),
                    hook_wall=med(hw), hook_rss=max(hr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def session_mode(a):
    from datetime import datetime, timezone
    print(f"memhook: {a.bin} ({os.path.getsize(a.bin) / 1e6:.1f} MB), "
          f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f}")
    if a.only in (None, "replay"):
        expected, rows = replay_rounds(a.bin, a.rounds)
        print(f"\n503-event replay, default delivery, {expected} events kept; "
              f"{a.rounds} rounds (each: /bin/true replay, then memhook replay)\n")
        print("| round | wall: memhook (/bin/true) | added wall | all CPU incl. drainers: memhook (/bin/true) | CPU ratio | hooks' own CPU | drainers started | in the store after last call | left after 5 s | peak RSS hook (drainer) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for i, (t, h) in enumerate(rows, 1):
            ms = lambda us: us / 1e3
            print(f"| {i} | {ms(h['replay_wall_us']):.0f} ms ({ms(t['replay_wall_us']):.0f}) | "
                  f"{ms(h['replay_wall_us'] - t['replay_wall_us']):.0f} ms | "
                  f"{ms(h['all_cpu_us']):.0f} ms ({ms(t['all_cpu_us']):.0f}) | "
                  f"{h['all_cpu_us'] / max(1, t['all_cpu_us']):.2f}x | "
                  f"{ms(h['hooks_cpu_us']):.0f} ms | {h['other_processes']} | "
                  f"{ms(h['delivered_after_us']):.0f} ms | {h['left_after_linger']} | "
                  f"{h['hook_max_rss_kib'] / 1024:.1f} MiB ({h['all_max_rss_kib'] / 1024:.1f}) |",
                  flush=True)
        per_event = [(h["all_cpu_us"] / 503, t["all_cpu_us"] / 503) for t, h in rows]
        print("\nAll CPU per event, drainers included: " + ", ".join(
            f"{m / 1e3:.2f} ms ({tr / 1e3:.2f}) = {m / tr:.2f}x" for m, tr in per_event))
    if a.only in (None, "per-call"):
        print(f"\nOne call, spool only (MEMHOOK_NO_HOOK_DELIVERY=1), 16 patterns, 2 KiB, "
              f"{a.runs} runs, medians\n")
        print("| pending | hook CPU (/bin/true) | CPU ratio | hook wall (/bin/true) | wall ratio | peak RSS |")
        print("|---|---|---|---|---|---|")
        cases = [("0", 0, False), ("≈10,000", 10_000 - a.runs - 5, False),
                 ("0, after 10,000 drained", 0, True)]
        for label, pending, drained in cases:
            r = per_call(a.bin, a.runs, pending, drained)
            print(f"| {label} | {r['hook_cpu']:.2f} ms ({r['true_cpu']:.2f}) | "
                  f"{r['hook_cpu'] / r['true_cpu']:.2f}x | {r['hook_wall']:.2f} ms "
                  f"({r['true_wall']:.2f}) | {r['hook_wall'] / r['true_wall']:.2f}x | "
                  f"{r['hook_rss']:.1f} MiB |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/memhook"))
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--mode", choices=["isolated", "session"], default="isolated")
    ap.add_argument("--rounds", type=int, default=3, help="session mode: replays of each")
    ap.add_argument("--only", choices=["replay", "per-call"], help="session mode: one part")
    a = ap.parse_args()
    a.bin = os.path.abspath(a.bin)
    if a.mode == "session":
        session_mode(a)
        return
    configs = [
        (0, 2048, False),
        (16, 2048, False),
        (128, 2048, False),
        (128, 2048, True),
        (16, 1024 * 1024, False),
    ]
    print("| policy | payload | hook CPU median | /bin/true CPU median | hook wall median | /bin/true wall median | wall ratio | hook peak RSS (/bin/true) |")
    print("|---|---|---|---|---|---|---|---|")
    for n, size, worst in configs:
        runs = a.runs if size <= 4096 else max(20, a.runs // 10)
        r = bench(a.bin, n, size, runs, worst)
        label = "no [capture]" if n == 0 else f"{n} patterns" + (" (all `**/` globs)" if worst else "")
        sz = f"{size // 1024} KiB" if size < 1024 * 1024 else f"{size // (1024 * 1024)} MiB"
        print(f"| {label} | {sz} | {r['hook_cpu']:.2f} ms | {r['true_cpu']:.2f} ms | "
              f"{r['hook_wall']:.2f} ms | {r['true_wall']:.2f} ms | "
              f"{r['hook_wall'] / r['true_wall']:.2f}x | {r['hook_rss']:.1f} MiB ({r['true_rss']:.1f} MiB) |", flush=True)


if __name__ == "__main__":
    main()
