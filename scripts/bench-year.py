#!/usr/bin/env python3
"""A year of heavy use (issue 29): generate a year of realistic records,
import them into a fresh embedded store and measure what a heavy user pays.

Usage:
  scripts/bench-year.py RECORDS DIR NAME=MEMHOOK_CLI [NAME=MEMHOOK_CLI …] [--runs N] [--no-forget] [--year FILE]
  scripts/bench-year.py RECORDS DIR NAME=MEMHOOK_CLI --steady-years K

With --year FILE the export file is FILE (outside DIR): generated there
when it does not exist, read again when it does (a 1,000,000-record year
takes minutes to generate; its times are relative to when it was made).

With --steady-years, K years of RECORDS records each are imported one after
the other (the last one ending now) and after each the store is left to
retention (docs/retention.md), driven by hook events whose background
drainers apply it when idle, until it removes nothing more; the records
kept and the database's bytes after each year say whether steady use stays
bounded.

Each MEMHOOK_CLI is a `memhook-cli` binary (`cargo build --release --locked
-p memhook --bin memhook-cli`), under a short NAME (`main`, `branch`); the
first is the baseline. Every binary imports the same generated file into
its own data dir, and every measurement takes turns between them, so the
figures of one run compare (the machine is shared and noisy). DIR is
emptied and holds the data dirs and the export file; put it on a real disk
(the figures of docs/benchmarks.md are on a real disk, never tmpfs).

The records are export lines (docs/team.md), the shapes `memhook hook`
writes (docs/record.md): 50 projects of Zipf-like sizes, 2,500 sessions
spread over 365 days ending now, each a session start, user prompts, tool
calls (a pre-tool-use without body, then its result: shell output with the
command line, files read, edits, grep listings; about 4 % failing with an
`error: …` body), the agent's stop messages and a session end. The text is
real: lines of this repository's Rust code and Markdown prose, chosen by a
seeded random generator (the same RECORDS give the same file).

Measured, each printed as one `name value unit` line (and all of them as
JSON at the end):
- import wall time, database bytes per record (after a WAL checkpoint) and
  where they go (`dbstat`: records, FTS index, indexes), the page size and
  the bytes per record left empty in the records table's pages;
- `memhook search --all` of a common word (`error`, `the`) warm (median of
  --runs, wall and CPU of the process) and cold (the database's pages
  dropped from the page cache with posix_fadvise first), and within one
  mid-sized project;
- `GET /api/projects` of `memhook serve --no-auth` (median of --runs);
- the session-start briefing of the biggest project (`memhook hook`, CPU);
- `memhook forget --project` of the project nearest 2 % of the records
  (20,000 at 1,000,000): wall, peak RSS (/usr/bin/time), and the peak of
  database + WAL + journal bytes while it ran, against the database before.
Uses only the standard library.
"""

import glob
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PROJECTS = 50
SESSIONS = 2500
DAYS = 365
DAY_MS = 86_400_000
SEED = 29
# The commit whose code and prose the records quote.
CORPUS_COMMIT = "0a83a87"

AGENTS = ["claude-code"] * 6 + ["codex"] * 2 + ["gemini-cli", "opencode"]


def corpus():
    """Code lines and prose lines of this repository as of CORPUS_COMMIT
    (fixed, so that every later commit generates the same records)."""
    tmp = tempfile.mkdtemp(prefix="bench-year-corpus-")
    try:
        archive = subprocess.run(["git", "-C", ROOT, "archive", CORPUS_COMMIT, "crates", "docs", "README.md"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        code, prose = [], []
        for path in sorted(glob.glob(os.path.join(tmp, "crates", "**", "*.rs"), recursive=True)):
            with open(path, encoding="utf-8") as f:
                code.extend(l.rstrip() for l in f if l.strip())
        for path in sorted(glob.glob(os.path.join(tmp, "docs", "*.md")) + [os.path.join(tmp, "README.md")]):
            with open(path, encoding="utf-8") as f:
                prose.extend(l.strip() for l in f if len(l.strip()) > 30 and not l.startswith(("|", "```")))
        return code, prose
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cut(text, cap):
    b = text.encode()
    if len(b) <= cap:
        return text
    return b[: cap - 3].decode("utf-8", "ignore") + "…"


def title_of(text):
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 80 else line[:79] + "…"


def generate(n, out_path, shift_days=0, seed=SEED):
    """Write `n` export lines; return {project: records}."""
    rng = random.Random(seed)
    code, prose = corpus()
    weights = [1.0 / (i + 1) ** 0.8 for i in range(PROJECTS)]
    names = [f"proj{i:02}" for i in range(PROJECTS)]
    now_ms = int(time.time() * 1000) + shift_days * DAY_MS
    start_ms = now_ms - DAYS * DAY_MS
    sessions = sorted(rng.randrange(start_ms, now_ms - DAY_MS // 4) for _ in range(SESSIONS))
    per = n // SESSIONS
    extra = n - per * SESSIONS
    counts = {}
    keyrng = random.Random(seed * 1000 + shift_days)

    def block(lines, lo, hi):
        k = rng.randint(lo, hi)
        i = rng.randrange(len(lines) - k)
        return "\n".join(lines[i : i + k])

    with open(out_path, "w", encoding="utf-8") as out:
        for s, t0 in enumerate(sessions):
            proj = rng.choices(names, weights)[0]
            agent = rng.choice(AGENTS)
            sid = "%08x-%04x-%04x-%04x-%012x" % tuple(rng.getrandbits(b) for b in (32, 16, 16, 16, 48))
            cwd = f"/home/dev/src/{proj}"
            want = per + (1 if s < extra else 0)
            ms = t0
            made = 0

            def emit(event, native, **kw):
                nonlocal ms, made
                ms += rng.randint(800, 40_000)
                sec, milli = divmod(ms, 1000)
                rec = {"v": 1, "key": "%032x" % keyrng.getrandbits(128),
                       "occurred_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{milli:03}Z",
                       "workspace": "default", "project": proj, "agent": agent, "event": event,
                       "native_event": native, "session_id": sid, "cwd": cwd, "subagent": False,
                       "tool_family": None, "tool_name": None, "tool_call_id": None, "outcome": None,
                       "disposition": "keep", "title": None, "body": None, "files": [], "token_name": None}
                rec.update(kw)
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                made += 1
                counts[proj] = counts.get(proj, 0) + 1

            emit("session-start", "SessionStart", title="session start")
            call = 0
            while made < want - 1:
                r = rng.random()
                if r < 0.06:
                    p = block(prose, 1, 5)
                    emit("user-prompt", "UserPromptSubmit", title=title_of(p), body=cut(p, 16384))
                    continue
                if r < 0.09:
                    p = block(prose, 2, 12)
                    emit("stop", "Stop", title="stop", body=cut(p, 4096))
                    continue
                call += 1
                cid = f"toolu_{s:04}_{call:04}"
                kind = rng.choices(["shell", "read", "edit", "grep"], [4, 3, 2, 1])[0]
                fam, name = {"shell": ("shell", "Bash"), "read": ("file", "Read"),
                             "edit": ("file", "Edit"), "grep": ("search-list", "Grep")}[kind]
                emit("pre-tool-use", "PreToolUse", title=f"{name} ({fam})", tool_family=fam,
                     tool_name=name, tool_call_id=cid)
                if made >= want - 1:
                    break
                failed = rng.random() < 0.04
                mod = f"crates/{rng.choice(['core', 'store', 'hook', 'delivery', 'sinks'])}/src/m{rng.randrange(40)}.rs"
                path = f"{cwd}/{mod}"
                files, command, exit_code = [], None, None
                if kind == "shell":
                    command = rng.choice(["cargo test -j1", "cargo build", "git status", "git diff",
                                          f"rg -n {rng.choice(code).split()[0] if rng.choice(code).split() else 'fn'}",
                                          "cargo clippy --all-targets", "ls -la src"])
                    body = block(code, 3, 30)
                    title = f"Bash: {command}"
                    exit_code = 1 if failed else 0
                elif kind == "read":
                    body = block(code, 10, 60)
                    title = f"Read {mod}"
                    files = [path]
                elif kind == "edit":
                    body = block(code, 1, 6)
                    title = f"Edit {mod}"
                    files = [path]
                else:
                    body = "\n".join(f"{mod}:{rng.randrange(1, 900)}: {rng.choice(code).strip()}" for _ in range(rng.randint(2, 15)))
                    title = "Grep"
                if failed:
                    body = f"error: {rng.choice(code).strip()}\n" + body
                kw = dict(title=title_of(title), body=cut(body, 2000), tool_family=fam, tool_name=name,
                          tool_call_id=cid, outcome="error" if failed else "success", files=files)
                if command is not None:
                    kw.update(command=command, exit_code=exit_code)
                emit("post-tool-use-failure" if failed else "post-tool-use",
                     "PostToolUseFailure" if failed else "PostToolUse", **kw)
            emit("session-end", "SessionEnd", title="session end")
    return counts


def db_files(data):
    return [os.path.join(data, f) for f in ("store.sqlite3", "store.sqlite3-wal", "store.sqlite3-journal")]


def size(paths):
    return sum(os.path.getsize(p) for p in paths if os.path.exists(p))


def drop_cache(data):
    for p in db_files(data):
        if os.path.exists(p):
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def cpu_run(argv, env, stdin=None, cwd=None):
    """(wall s, CPU s, stdout) of one child, CPU from wait4(2)."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    if stdin is not None:
        p.stdin.write(stdin)
        p.stdin.close()
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    if status != 0:
        sys.exit(f"bench-year: {' '.join(argv)} failed ({status}): {err.decode()[-2000:]}")
    return dt, ru.ru_utime + ru.ru_stime, out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def steady(n, base, binary, years):
    """`years` years of use, one after the other, each imported and then
    left to retention (driven by hook events, whose drainers apply it when
    idle): the store's records and bytes after each year."""
    shutil.rmtree(base, ignore_errors=True)
    home = os.path.join(base, "home")
    data = os.path.join(home, "data")
    os.makedirs(data)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_MEMORY_", "MEMHOOK_"))}
    env.update(HOME=home, AI_MEMORY_DATA_DIR=data)
    with open(os.path.join(ROOT, "fixtures", "agents", "claude-code", "2.1.328", "UserPromptSubmit.json")) as f:
        payload = json.load(f)
    cwd = os.path.join(home, "src", "proj00")
    os.makedirs(cwd, exist_ok=True)
    db = os.path.join(data, "store.sqlite3")

    def books():
        con = sqlite3.connect(db)
        try:
            records = con.execute("SELECT coalesce(sum(records), 0) FROM projects").fetchone()[0]
            try:
                removed = con.execute("SELECT coalesce(sum(removed), 0) FROM retention").fetchone()[0]
            except sqlite3.OperationalError:
                removed = 0
            free = con.execute("PRAGMA freelist_count").fetchone()[0]
            page = con.execute("PRAGMA page_size").fetchone()[0]
            return records, removed, free * page
        finally:
            con.close()

    for y in range(years):
        dump = os.path.join(base, f"year{y + 1}.jsonl")
        generate(n, dump, shift_days=-DAYS * (years - 1 - y), seed=SEED + y)
        cpu_run([binary, "import", dump], env)
        os.remove(dump)
        t = time.perf_counter()
        last, still, i = None, 0, 0
        while still < 8:
            p = json.dumps(dict(payload, cwd=cwd, session_id=f"steady-{y}-{i}", prompt="steady use")).encode()
            cpu_run([binary, "hook", "--agent", "claude-code"], dict(env, AI_MEMORY_PROJECT="proj00",
                                                                    AI_MEMORY_WORKSPACE="default"), p, cwd)
            time.sleep(0.5)
            _, removed, _ = books()
            still = still + 1 if removed == last else 0
            last, i = removed, i + 1
        records, removed, free = books()
        print(f"year {y + 1}: {records} records kept, {removed} removed by retention so far "
              f"({time.perf_counter() - t:.0f} s of hook events), database {os.path.getsize(db)} bytes "
              f"of which {free} free pages", flush=True)


def main():
    args = sys.argv[1:]
    if "--steady-years" in args:
        i = args.index("--steady-years")
        years = int(args[i + 1])
        del args[i : i + 2]
        steady(int(args[0]), os.path.abspath(args[1]), os.path.abspath(args[2].split("=", 1)[-1]), years)
        return
    runs = 7
    if "--runs" in args:
        i = args.index("--runs")
        runs = int(args[i + 1])
        del args[i : i + 2]
    year = None
    if "--year" in args:
        i = args.index("--year")
        year = os.path.abspath(args[i + 1])
        del args[i : i + 2]
    forget = "--no-forget" not in args
    args = [a for a in args if a != "--no-forget"]
    if len(args) < 3 or any("=" not in a for a in args[2:]):
        sys.exit(__doc__)
    n, base = int(args[0]), os.path.abspath(args[1])
    bins = [(a.split("=", 1)[0], os.path.abspath(a.split("=", 1)[1])) for a in args[2:]]
    results = {"records": n}

    def report(name, who, value, unit):
        results[f"{name}.{who}"] = value
        print(f"{name:32} {who:8} {value} {unit}", flush=True)

    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    dump = year or os.path.join(base, "year.jsonl")
    t = time.perf_counter()
    if year and os.path.exists(year):
        counts = {}
        with open(year, encoding="utf-8") as f:
            for line in f:
                proj = json.loads(line)["project"]
                counts[proj] = counts.get(proj, 0) + 1
        if sum(counts.values()) != n:
            sys.exit(f"bench-year: {year} holds {sum(counts.values())} records, not {n}")
    else:
        counts = generate(n, dump)
    report("generate_s", "-", round(time.perf_counter() - t, 1), "s")
    report("export_bytes_per_record", "-", round(os.path.getsize(dump) / n), "B")
    by_size = sorted(counts.items(), key=lambda kv: kv[1])
    mid = by_size[len(by_size) // 2][0]
    big = by_size[-1][0]
    target = min(counts.items(), key=lambda kv: abs(kv[1] - 0.02 * n))[0]

    envs = {}
    for who, binary in bins:
        home = os.path.join(base, who, "home")
        data = os.path.join(home, "data")
        os.makedirs(data)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_MEMORY_", "MEMHOOK_"))}
        env.update(HOME=home, AI_MEMORY_DATA_DIR=data, MEMHOOK_NO_HOOK_DELIVERY="1")
        envs[who] = (env, home, data)
        dt, _, _ = cpu_run([binary, "import", dump], env)
        report("import_s", who, round(dt, 1), "s")
        # The drainer empties the WAL after its batches; do the same.
        con = sqlite3.connect(os.path.join(data, "store.sqlite3"))
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        # Since schema 12 (issue 29) the rows are in `record_rows` and
        # `records` is a view over memhook's own SQL functions, which
        # Python's sqlite3 does not have.
        table = ("record_rows" if con.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'record_rows'").fetchone() else "records")
        stored = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        db = os.path.getsize(os.path.join(data, "store.sqlite3"))
        report("stored_records", who, stored, "records")
        report("db_bytes", who, db, "B")
        report("bytes_per_record", who, round(db / stored), "B")
        parts = {}
        for name, pgsize in con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            group = ("fts" if name.startswith("records_fts") else
                     "records" if name == table else
                     "indexes" if name.startswith(("records_", f"sqlite_autoindex_{table}")) else "other")
            parts[group] = parts.get(group, 0) + pgsize
        for group, b in sorted(parts.items()):
            report(f"share_{group}", who, round(100 * b / db, 1), "%")
        report("page_size", who, con.execute("PRAGMA page_size").fetchone()[0], "B")
        unused = con.execute("SELECT sum(unused) FROM dbstat WHERE name = ?", (table,)).fetchone()[0]
        report("records_unused_per_record", who, round(unused / stored), "B")
        con.close()

    def search(binary, word, scope):
        argv = [binary, "search", word, "--limit", "20"]
        argv += ["--all"] if scope is None else ["--workspace", "default", "--project", scope]
        return argv

    for word in ("error", "the"):
        for scope, label in ((None, "all"), (mid, "project")):
            answers = set()
            for who, binary in bins:
                env, _, data = envs[who]
                drop_cache(data)
                cold, _, out = cpu_run(search(binary, word, scope), env)
                answers.add(out)
                report(f"search_{label}_{word}_cold_ms", who, round(cold * 1000, 1), "ms wall")
            if len(answers) != 1:
                print(f"bench-year: the binaries answer `search {word}` ({label}) differently", flush=True)
            warm = {who: ([], []) for who, _ in bins}
            for _ in range(runs):
                for who, binary in bins:
                    w, c, _ = cpu_run(search(binary, word, scope), envs[who][0])
                    warm[who][0].append(w)
                    warm[who][1].append(c)
            for who, _ in bins:
                report(f"search_{label}_{word}_warm_ms", who, round(statistics.median(warm[who][0]) * 1000, 1), "ms wall")
                report(f"search_{label}_{word}_warm_cpu_ms", who, round(statistics.median(warm[who][1]) * 1000, 1), "ms CPU")
    for who, binary in bins:
        floor = [cpu_run([binary, "search", "zqxnomatch", "--all"], envs[who][0])[1] for _ in range(runs)]
        report("search_no_match_cpu_ms", who, round(statistics.median(floor) * 1000, 1), "ms CPU (process start and open)")

    servers = []
    try:
        for who, binary in bins:
            port = free_port()
            srv = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--no-auth"],
                                   env=envs[who][0], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            servers.append((who, srv, f"http://127.0.0.1:{port}/api/projects"))
        for _, _, url in servers:
            for _ in range(200):
                try:
                    urllib.request.urlopen(url).read()
                    break
                except OSError:
                    time.sleep(0.05)
        times = {who: [] for who, _, _ in servers}
        for _ in range(max(runs, 21)):
            for who, _, url in servers:
                t = time.perf_counter()
                body = urllib.request.urlopen(url).read()
                times[who].append(time.perf_counter() - t)
        for who, _, _ in servers:
            report("api_projects_ms", who, round(statistics.median(times[who]) * 1000, 2), "ms wall")
        listed = json.loads(body)
        listed = listed.get("projects", listed) if isinstance(listed, dict) else listed
        report("api_projects_listed", "-", len(listed), "projects")
    finally:
        for _, srv, _ in servers:
            srv.send_signal(signal.SIGTERM)
            srv.wait()

    with open(os.path.join(ROOT, "fixtures", "agents", "claude-code", "2.1.328", "SessionStart-startup.json")) as f:
        payload = json.load(f)
    brief = {who: [] for who, _ in bins}
    chars = {}
    for i in range(runs + 1):
        for who, binary in bins:
            env, home, data = envs[who]
            cwd = os.path.join(home, "src", big)
            os.makedirs(cwd, exist_ok=True)
            p = json.dumps(dict(payload, cwd=cwd, session_id=f"bench-year-{i}")).encode()
            if i == 0:
                drop_cache(data)
            dt, cpu, out = cpu_run([binary, "hook", "--agent", "claude-code"],
                                   dict(env, AI_MEMORY_PROJECT=big, AI_MEMORY_WORKSPACE="default"), p, cwd)
            brief[who].append((dt, cpu))
            chars[who] = len(json.loads(out).get("hookSpecificOutput", {}).get("additionalContext", ""))
    for who, _ in bins:
        report("briefing_cold_ms", who, round(brief[who][0][0] * 1000, 1), "ms wall")
        report("briefing_warm_cpu_ms", who, round(statistics.median(c for _, c in brief[who][1:]) * 1000, 1), "ms CPU")
        report("briefing_chars", who, chars[who], "chars")

    if forget:
        report("forget_project_records", "-", counts[target], "records")
        for who, binary in bins:
            env, _, data = envs[who]
            con = sqlite3.connect(os.path.join(data, "store.sqlite3"))
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.close()
            before = size(db_files(data))
            peak = [before]
            stop = threading.Event()

            def watch():
                while not stop.is_set():
                    peak[0] = max(peak[0], size(db_files(data)))
                    time.sleep(0.005)

            w = threading.Thread(target=watch)
            w.start()
            t = time.perf_counter()
            p = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", binary, "forget", "--project", f"default/{target}", "--yes"],
                               env=env, capture_output=True)
            dt = time.perf_counter() - t
            stop.set()
            w.join()
            if p.returncode != 0:
                sys.exit(f"bench-year: forget failed: {p.stderr.decode()[-2000:]}")
            report("forget_s", who, round(dt, 2), "s wall")
            user, system, rss = p.stderr.decode().strip().splitlines()[-1].split()
            report("forget_cpu_s", who, round(float(user) + float(system), 2), "s CPU")
            report("forget_peak_rss_mib", who, round(int(rss) / 1024, 1), "MiB")
            report("forget_disk_peak_ratio", who, round(peak[0] / before, 2), "x the database before")

    print(json.dumps(results))


if __name__ == "__main__":
    main()
