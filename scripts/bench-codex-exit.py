#!/usr/bin/env python3
"""What reading Codex's exit code from its rollout costs a PostToolUse call
(crates/core/src/event/transcript.rs; docs/benchmarks.md, "Codex exit codes").

Rounds of /bin/true, then one spool-only `memhook hook --agent codex --event
PostToolUse` call with the real Codex 0.171.0 payload of a failing command
(fixtures/agents/codex/0.171.0/PostToolUse-Bash-exit1.json) whose
`transcript_path` names nothing, then the same payload naming a rollout of
1 MiB whose last line is the call's `item_completed` event (the hook reads its
last 64 KiB). Child CPU time from wait4(2) through bench-hook.py's launcher;
medians, and ratios taken in the same run.

Usage: scripts/bench-codex-exit.py [--runs 300] BINARY
"""

import argparse
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
FIXTURE = os.path.join(HERE, "..", "fixtures", "agents", "codex", "0.171.0", "PostToolUse-Bash-exit1.json")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("binary")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="memhook-codex-exit-", dir=os.path.dirname(os.path.abspath(a.binary)))
    try:
        home = os.path.join(tmp, "home")
        project = os.path.join(home, "proj")
        os.makedirs(project)
        sessions = os.path.join(home, ".codex", "sessions", "2026", "12", "04")
        os.makedirs(sessions)
        payload = json.load(open(FIXTURE))
        payload["cwd"] = project
        call = payload["tool_use_id"]
        rollout = os.path.join(sessions, "rollout-2026-12-04T14-43-49-" + payload["session_id"] + ".jsonl")
        # Compact, as Codex writes it.
        compact = {"separators": (",", ":")}
        filler = json.dumps({"type": "response_item", "payload": {"type": "message", "content": "x" * 900}},
                            **compact)
        done = json.dumps({"type": "event_msg", "payload": {"type": "item_completed", "item": {
            "type": "CommandExecution", "id": call, "status": "failed",
            "aggregated_output": "failing\n", "exit_code": 1}}}, **compact)
        with open(rollout, "w") as f:
            for _ in range(1024):
                f.write(filler + "\n")
            f.write(done + "\n")
        files = {}
        # "far": the call's line is not within the last 4 KiB, so 64 KiB are read.
        far = rollout.replace("rollout-", "rollout-far-")
        with open(far, "w") as f:
            for _ in range(1024):
                f.write(filler + "\n")
            f.write(done + "\n")
            for _ in range(6):
                f.write(filler + "\n")
        for name, path in (("no transcript", "/nonexistent/sessions/rollout-x.jsonl"), ("rollout read", rollout),
                           ("rollout read, far", far)):
            p = dict(payload, transcript_path=path)
            files[name] = os.path.join(tmp, name.replace(" ", "-") + ".json")
            with open(files[name], "w") as f:
                json.dump(p, f)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("AI_MEMORY_") and not k.startswith("MEMHOOK_")}
        env.update(HOME=home, AI_MEMORY_DATA_DIR=os.path.join(tmp, "data"), MEMHOOK_NO_HOOK_DELIVERY="1")
        empty = os.path.join(tmp, "empty")
        open(empty, "wb").close()
        rows = {"/bin/true": []}
        rows.update({n: [] for n in files})
        for i in range(a.runs + 5):
            for name in rows:
                if name == "/bin/true":
                    c, _, _ = bench_hook.run_once(["/bin/true"], empty, env)
                else:
                    c, _, _ = bench_hook.run_once(
                        [a.binary, "hook", "--agent", "codex", "--event", "PostToolUse"], files[name], env)
                if i >= 5:
                    rows[name].append(c)
        med = statistics.median
        t = med(rows["/bin/true"])
        print(f"{a.runs} rounds, medians; load {os.getloadavg()[0]:.1f}\n")
        print("| call | CPU | ratio to /bin/true |")
        print("|---|---|---|")
        for name, c in rows.items():
            print(f"| {name} | {med(c):.3f} ms | {med(c) / t:.2f}× |")
        for name in ("rollout read", "rollout read, far"):
            print(f"\n{name} minus no transcript: {med(rows[name]) - med(rows['no transcript']):+.3f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
