#!/usr/bin/env python3
"""The handoff benchmark (docs/benchmarks.md, "Handoff").

Part 1, what a briefing carries: runs the real-agent handoff sessions of
tests/integration/handoff.rs (real Claude Code and Codex CLIs, offline,
installed by `install-hooks --apply`; session 1 fixes a leap-year bug after a
failing test, leaves a plan item open and ends with a conclusion; the next
session, of the same and of the other agent, starts). Each next session's
briefing, as read from the model request it sent, is scored against seven
known facts, and its cost is its stated size in characters and approximate
tokens.

Part 2, what search finds: runs examples/search_bench.rs (twelve sessions,
nineteen questions: the fact's own words, other inflections and split
identifiers, paraphrases) and reports recall in the top three.

    python3 scripts/bench-handoff.py            # both parts
    python3 scripts/bench-handoff.py --handoff  # part 1 only
    python3 scripts/bench-handoff.py --search   # part 2 only

Needs the agent CLIs (`bash scripts/install-agent-clis.sh`). Prints one
Markdown table per part.
"""

import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each fact: (name, a test on the briefing's text). The words are the ones
# session 1's prompt, plan and final message use (tests/integration/handoff.rs).
FACTS = [
    ("goal, whole", lambda b: "after that we will add a command-line entry point" in b),
    ("cause, in the agent's words", lambda b: "ignored the century rule" in b),
    ("changed file", lambda b: any(l.startswith("- Changed:") and "leap.py" in l for l in b.splitlines())),
    ("test failed, then passed", lambda b: any(
        "test_leap.py" in l and "failed" in l.lower() and "passed" in l.lower() for l in b.splitlines())),
    ("open plan item", lambda b: "Add a command-line entry point for leap.py" in b),
    ("not the done item as open", lambda b: not any(
        "Still open" in l and "Fix is_leap for century years" in l for l in b.splitlines())),
    ("nothing of the excluded file", lambda b: "TOPSECRET" not in b and "secret/key.txt" not in b),
]

PAIRS = [
    "claude_code_hands_over_to_claude_code",
    "claude_code_hands_over_to_codex",
    "codex_hands_over_to_codex",
    "codex_hands_over_to_claude_code",
]


def run(cmd, env=None, must=True):
    print("+", " ".join(cmd), file=sys.stderr)
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 and must:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        sys.exit(f"bench-handoff: {' '.join(cmd)} failed with exit {p.returncode}")
    return p.stdout


def handoff():
    out = tempfile.mkdtemp(prefix="bench-handoff-")
    env = dict(os.environ, MEMHOOK_HANDOFF_OUT=out, CI="true")
    # A briefing that misses a fact fails its test after it was written: it
    # is scored all the same.
    run(["cargo", "test", "--locked", "--test", "integration", "--", "handoff::", "--test-threads=1"], env,
        must=False)
    print("| session 1 → next | facts carried | characters | ~tokens | missing |")
    print("|---|---|---|---|---|")
    for pair in PAIRS:
        path = os.path.join(out, pair + ".txt")
        if not os.path.exists(path):
            print(f"| {pair} | no briefing (session failed; see the test output) | | | |")
            continue
        b = open(path, encoding="utf-8").read()
        head = b.splitlines()[0]
        m = re.search(r"([\d,]+) characters, ~([\d,]+) tokens", head)
        chars, tokens = (m.group(1), m.group(2)) if m else ("?", "?")
        missing = [name for name, test in FACTS if not test(b)]
        carried = len(FACTS) - len(missing)
        first, nxt = pair.split("_hands_over_to_")
        print(f"| {first.replace('_', ' ')} → {nxt.replace('_', ' ')} | {carried} of {len(FACTS)} | {chars} | {tokens} | {', '.join(missing) or '—'} |")


def search():
    text = run(["cargo", "run", "--locked", "--release", "--example", "search_bench"])
    sys.stdout.write(text)


def main():
    args = set(sys.argv[1:])
    if not args or "--handoff" in args:
        handoff()
    if not args or "--search" in args:
        search()


if __name__ == "__main__":
    main()
