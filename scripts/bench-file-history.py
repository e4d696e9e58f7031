#!/usr/bin/env python3
"""What the file history costs a pre-tool-use call (crates/core/src/history.rs;
docs/benchmarks.md, "File history").

Rounds of /bin/true, then spool-only `memhook hook --agent claude-code
--event PreToolUse` calls with the real Claude Code 2.1.328 `Read` payload:
with no history for the project (today's call), with a full history file
(as large as the drainer writes it: just under 64 KiB) that does not hold the file read, and with one that
does (the call prints the line). Child CPU time from wait4(2) through
bench-hook.py's launcher; medians, and differences taken in the same run.

Usage: scripts/bench-file-history.py [--runs 300] BINARY
"""

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import statistics
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_hook", os.path.join(HERE, "bench-hook.py"))
bench_hook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_hook)
FIXTURE = os.path.join(HERE, "..", "fixtures", "agents", "claude-code", "2.1.328", "PreToolUse-Read.json")


def history_file(data, workspace, project, files):
    key = hashlib.sha256(workspace.encode() + b"\0" + project.encode()).hexdigest()[:32]
    d = os.path.join(data, "history")
    os.makedirs(d, mode=0o700, exist_ok=True)
    path = os.path.join(d, key + ".json")
    with open(path, "w") as f:
        json.dump({"version": 1, "files": files}, f)
    os.chmod(path, 0o600)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("binary")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="memhook-history-", dir=os.path.dirname(os.path.abspath(a.binary)))
    try:
        home = os.path.join(tmp, "home")
        project = os.path.join(home, "projects", "demo")
        os.makedirs(os.path.join(project, "src"))
        text = open(FIXTURE).read().replace("/home/dev", home)
        payload = os.path.join(tmp, "payload.json")
        with open(payload, "w") as f:
            f.write(text)
        target = json.loads(text)["tool_input"]["file_path"]
        line = ("changed 2026-12-03 14:05 UTC by claude-code in session 3f2a9c41 (goal: \"make the "
                "parser accept ISO dates and keep the old format working\"); it ended with Bash "
                "\"pytest -q tests/test_dates.py\" failing, exit 1")
        others = {}
        # As the drainer writes it: entries until the file would pass 64 KiB.
        while len(json.dumps({"version": 1, "files": others})) < 64 * 1024 - 600:
            i = len(others)
            others[f"{project}/src/module_{i:03}.py"] = f"src/module_{i:03}.py: {line}"
        datas = {}
        for name, files in (("no history", None), ("history, file not in it", others),
                            ("history, file in it", dict(others, **{target: "src/app.py: " + line}))):
            data = os.path.join(tmp, "data-" + str(len(datas)))
            os.makedirs(data, mode=0o700)
            if files is not None:
                history_file(data, "default", "demo", files)
            datas[name] = data
        size = os.path.getsize(os.path.join(datas["history, file in it"], "history", os.listdir(
            os.path.join(datas["history, file in it"], "history"))[0]))
        import subprocess
        check_env = {k: v for k, v in os.environ.items() if not k.startswith("AI_MEMORY_") and not k.startswith("MEMHOOK_")}
        check_env.update(HOME=home, AI_MEMORY_DATA_DIR=datas["history, file in it"], MEMHOOK_NO_HOOK_DELIVERY="1")
        out = subprocess.run([a.binary, "hook", "--agent", "claude-code", "--event", "PreToolUse"],
                             stdin=open(payload), env=check_env, capture_output=True, text=True).stdout
        assert "memhook file history: src/app.py" in out, out
        base = {k: v for k, v in os.environ.items() if not k.startswith("AI_MEMORY_") and not k.startswith("MEMHOOK_")}
        envs = {n: dict(base, HOME=home, AI_MEMORY_DATA_DIR=d, MEMHOOK_NO_HOOK_DELIVERY="1") for n, d in datas.items()}
        empty = os.path.join(tmp, "empty")
        open(empty, "wb").close()
        rows = {"/bin/true": []}
        rows.update({n: [] for n in datas})
        for i in range(a.runs + 5):
            for name in rows:
                if name == "/bin/true":
                    c, _, _ = bench_hook.run_once(["/bin/true"], empty, base)
                else:
                    c, _, _ = bench_hook.run_once(
                        [a.binary, "hook", "--agent", "claude-code", "--event", "PreToolUse"], payload, envs[name])
                if i >= 5:
                    rows[name].append(c)
        med = statistics.median
        t = med(rows["/bin/true"])
        print(f"{a.runs} rounds, medians; load {os.getloadavg()[0]:.1f}; history file {size} bytes, "
              f"{len(others) + 1} files\n")
        print("| call | CPU | ratio to /bin/true | minus no history |")
        print("|---|---|---|---|")
        for name, c in rows.items():
            extra = "" if name == "/bin/true" else f"{med(c) - med(rows['no history']):+.3f} ms"
            print(f"| {name} | {med(c):.3f} ms | {med(c) / t:.2f}× | {extra} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
