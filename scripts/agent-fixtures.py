#!/usr/bin/env python3
"""Turn payloads a real agent session handed to memhook's hook into
fixtures/agents/<agent>/<version>/.

Run an end-to-end test with MEMHOOK_CAPTURE_PAYLOADS=<dir> (the test's
memhook shim keeps every payload and its arguments there), then:

    python3 scripts/agent-fixtures.py <dir> fixtures/agents/<agent>/<version>

The test's temporary HOME becomes /home/dev; each file is named after the
memhook event and the tool (`post-tool-use-Execute.json`, `-2` for a
repeat); index.json lists them in the order they fired.
"""
import json
import os
import re
import sys

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
TMP = re.compile(r"/tmp/\.tmp[A-Za-z0-9_]+")
# The same dir as agents spell it in a file name (Claude's project dirs).
TMP_DASHED = re.compile(r"-tmp-[-.]tmp[A-Za-z0-9_]+")
TOOL_KEYS = ("tool_name", "toolName", "tool", "hook_event_name")
index, seen = [], {}
for name in sorted(n for n in os.listdir(src) if n.endswith(".json")):
    raw = open(os.path.join(src, name), encoding="utf-8", errors="replace").read()
    args = open(os.path.join(src, name + ".args")).read().split()
    event = args[args.index("--event") + 1] if "--event" in args else "event"
    text = TMP_DASHED.sub("-home-dev", TMP.sub("/home/dev", raw))
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    tool = None
    if isinstance(payload, dict):
        for k in ("tool_name", "toolName", "tool"):
            if isinstance(payload.get(k), str):
                tool = payload[k]
                break
        pre = payload.get("preToolUse") or payload.get("postToolUse")
        if tool is None and isinstance(pre, dict):
            tool = pre.get("toolName") or pre.get("tool")
    base = event + (f"-{re.sub(r'[^A-Za-z0-9_.-]', '_', tool)}" if tool else "")
    seen[base] = seen.get(base, 0) + 1
    file = base + (f"-{seen[base]}" if seen[base] > 1 else "") + ".json"
    with open(os.path.join(out, file), "w") as f:
        if payload is not None:
            json.dump(payload, f, indent=1, ensure_ascii=False)
            f.write("\n")
        else:
            f.write(text)
    index.append({"file": file, "event": event, "args": TMP.sub("/home/dev", " ".join(args)), "raw": name})
with open(os.path.join(out, "index.json"), "w") as f:
    json.dump(index, f, indent=1)
    f.write("\n")
print(f"{len(index)} payloads into {out}")
