#!/usr/bin/env python3
"""What the model reads: the session-start briefing and a search -> timeline
-> get round, in characters, against claude-mem's published figures.

Usage: scripts/bench-disclosure.py MEMHOOK_BINARY [PROMPTS] [TOOLS_PER_PROMPT]

Replays one working session through `memhook hook` (real Claude Code payload
shapes from fixtures/agents/claude-code/2.1.328: prompts, Read / Edit / Bash /
Grep pre- and post-tool events, one failing command per prompt, Stop and
SessionEnd), drains it into the embedded store of a throw-away HOME, then
measures:

- the next session's briefing (the additionalContext the agent injects);
- `activity_search` for a word several prompts share (limit 20);
- `activity_timeline` around the best hit (3 before, 3 after);
- `activity_get` of three ids from the search;

each as the characters of the text the model is given (the MCP result's
content text). Tokens are estimated as characters / 4. claude-mem's figures
(their documentation, see ../shared/reference/progressive-disclosure.md):
50-100 tokens per search result, 500-1,000 per full item, about 3,000 for
search + timeline + three items, 10,000-20,000 for twenty items injected up
front. Uses only the standard library; deterministic apart from ids.
"""

import json
import os
import subprocess
import sys
import tempfile

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "agents", "claude-code", "2.1.328")
WORDS = ["retry", "cache", "parser", "timeout", "login", "export"]


def load(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def hook(binary, env, cwd, payload, event=None):
    args = [binary, "hook", "--agent", "claude-code"]
    if event:
        args += ["--event", event]
    out = subprocess.run(args, input=json.dumps(payload).encode(), env=env, cwd=cwd, capture_output=True, check=True)
    return json.loads(out.stdout or b"{}")


def session_events(home, project, sid, prompts, tools):
    """The events of one session, as (event, payload)."""
    base = {"session_id": sid, "transcript_path": f"{home}/.claude/projects/x/{sid}.jsonl", "cwd": project, "permission_mode": "default"}
    yield "SessionStart", dict(load("SessionStart-startup.json"), **base)
    n = 0
    for p in range(prompts):
        word = WORDS[p % len(WORDS)]
        text = f"Step {p + 1}: make the {word} handling in pkg{p % 7} robust, then run the tests and fix what fails"
        yield "UserPromptSubmit", dict(load("UserPromptSubmit.json"), **base, prompt=text)
        for t in range(tools):
            n += 1
            path = f"{project}/src/pkg{p % 7}/mod{(p * tools + t) % 23}.py"
            kind = ["Read", "Edit", "Bash", "Grep"][t % 4]
            tid = f"toolu_{n:05}"
            if kind == "Read":
                pre, post = load("PreToolUse-Read.json"), load("PostToolUse-Read.json")
                inp = {"file_path": path}
                resp = dict(post["tool_response"])
                resp["file"] = dict(resp.get("file", {}), filePath=path, content=f"def {word}():\n    return {t}\n")
            elif kind == "Edit":
                pre, post = load("PreToolUse-Edit.json"), load("PostToolUse-Edit.json")
                inp = dict(pre["tool_input"], file_path=path)
                resp = dict(post["tool_response"], filePath=path)
            elif kind == "Bash":
                failing = t + 4 >= tools  # the last command of each prompt fails
                pre = load("PreToolUse-Bash.json")
                post = load("PostToolUseFailure-Bash-exit1.json" if failing else "PostToolUse-Bash.json")
                inp = dict(pre["tool_input"], command=f"pytest -q tests/test_{word}.py")
                resp = post.get("tool_response")
            else:
                pre, post = load("PreToolUse-Grep.json"), load("PostToolUse-Grep.json")
                inp = dict(pre["tool_input"], pattern=word, path=f"{project}/src")
                resp = post.get("tool_response")
            yield "PreToolUse", dict(pre, **base, tool_input=inp, tool_use_id=tid)
            done = dict(post, **base, tool_input=inp, tool_use_id=tid)
            if resp is not None:
                done["tool_response"] = resp
            yield post["hook_event_name"], done
        yield "Stop", dict(load("Stop.json"), **base)
    yield "SessionEnd", dict(load("SessionEnd-other.json"), **base)


def mcp(binary, env, cwd, calls):
    p = subprocess.Popen([binary, "mcp", "--cwd", cwd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)

    def ask(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    ask(0, "initialize", {"protocolVersion": "2025-06-18"})
    answers = []
    last = None
    for i, make in enumerate(calls, start=1):
        name, args = make(last)
        last = ask(i, "tools/call", {"name": name, "arguments": args})["result"]
        answers.append((name, last))
    p.stdin.close()
    p.wait()
    return answers


def text_of(result):
    return "".join(c.get("text", "") for c in result.get("content", []))


def main():
    binary = os.path.abspath(sys.argv[1])
    prompts = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    tools = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    home = tempfile.mkdtemp(prefix="memhook-disclosure-")
    project = os.path.join(home, "projects", "demo")
    os.makedirs(project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_MEMORY_", "MEMHOOK_"))}
    env.update(HOME=home, AI_MEMORY_DATA_DIR=os.path.join(home, "data"), MEMHOOK_NO_HOOK_DELIVERY="1", MEMHOOK_BRIEFING_BUDGET_MS="10000")

    events = 0
    for event, payload in session_events(home, project, "bench-session-1", prompts, tools):
        hook(binary, env, project, payload, event)
        events += 1
    subprocess.run([binary, "drain"], env=env, check=True, capture_output=True)

    start = {"session_id": "bench-next", "cwd": project, "hook_event_name": "SessionStart", "source": "startup"}
    envelope = hook(binary, env, project, start)
    briefing = envelope.get("hookSpecificOutput", {}).get("additionalContext", "")

    word = WORDS[0]
    answers = mcp(binary, env, project, [
        lambda _l: ("activity_search", {"query": word, "limit": 20}),
        lambda l: ("activity_timeline", {"id": l["structuredContent"]["records"][0]["id"], "before": 3, "after": 3}),
        lambda _l: ("activity_search", {"query": word, "limit": 20}),
    ])
    rows = answers[0][1]["structuredContent"]["records"]
    ids = [r["id"] for r in rows[:3]]
    answers += mcp(binary, env, project, [lambda _l: ("activity_get", {"ids": ids})])

    def tok(chars):
        return round(chars / 4)

    search = len(text_of(answers[0][1]))
    timeline = len(text_of(answers[1][1]))
    get = len(text_of(answers[3][1]))
    round_trip = search + timeline + get
    print(f"session replayed: {events} events ({prompts} prompts x {tools} tools, pre and post)")
    print(f"{'what the model reads':<44} {'chars':>7} {'~tokens':>8}   claude-mem (published)")
    print(f"{'session-start briefing':<44} {len(briefing):>7} {tok(len(briefing)):>8}   10,000-20,000 tokens (20 items up front)")
    print(f"{f'activity_search {word!r}, {len(rows)} rows':<44} {search:>7} {tok(search):>8}   50-100 tokens per row: {50 * len(rows):,}-{100 * len(rows):,}")
    print(f"{'  per row':<44} {search // max(len(rows), 1):>7} {tok(search // max(len(rows), 1)):>8}   50-100")
    print(f"{'activity_timeline (3 before, 3 after)':<44} {timeline:>7} {tok(timeline):>8}   (part of the 3,000 below)")
    print(f"{'activity_get, 3 whole records':<44} {get:>7} {tok(get):>8}   500-1,000 tokens each: 1,500-3,000")
    print(f"{'search + timeline + get':<44} {round_trip:>7} {tok(round_trip):>8}   about 3,000 tokens")
    print(f"ratio, search + timeline + get vs claude-mem's 3,000 tokens: {tok(round_trip) / 3000:.2f}")
    print("\n--- the briefing ---\n" + briefing)


if __name__ == "__main__":
    main()
