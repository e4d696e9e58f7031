#!/usr/bin/env bash
# Run memhook's fuzz targets (cargo-fuzz, nightly) with seed corpora made from
# fixtures/. Findings land in fuzz/artifacts/<target>/; the corpora grow in
# fuzz/corpus/<target>/ (both git-ignored).
#
#   bash scripts/fuzz.sh                 # every target, 600 s each
#   bash scripts/fuzz.sh redact 60       # one target, 60 s
#
# Needs: rustup's nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz --locked`); both are installed here if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(intake marker shell redact serve)
[ $# -ge 1 ] && targets=("$1")
secs="${2:-600}"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

seed() {
  local t=$1 dir=fuzz/corpus/$1
  mkdir -p "$dir"
  python3 - "$t" "$dir" <<'PY'
import glob, hashlib, json, os, sys
t, out = sys.argv[1], sys.argv[2]
def put(data):
    if isinstance(data, str):
        data = data.encode()
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
payloads = sorted(glob.glob("fixtures/agents/**/*.json", recursive=True))
if t == "intake":
    for p in payloads:
        put(open(p, "rb").read())
elif t == "marker":
    for c in json.load(open("fixtures/scope/cases.json"))["cases"]:
        for name, text in (c.get("files") or {}).items():
            if name.endswith(".ai-memory.toml") and isinstance(text, str):
                put(text)
elif t == "shell":
    for c in json.load(open("fixtures/capture/cases.json")):
        for ptr, v in (c.get("set") or {}).items():
            if ptr.endswith("/command") and isinstance(v, str):
                put(v)
    for p in payloads:
        v = json.load(open(p))
        cmd = (v.get("tool_input") or {}).get("command") if isinstance(v, dict) else None
        if isinstance(cmd, str):
            put(cmd)
elif t == "redact":
    for p in sorted(glob.glob("fixtures/secrets/*")):
        for line in open(p, encoding="utf-8", errors="replace"):
            if line.strip():
                put(line)
    for p in payloads[:200]:
        put(open(p, "rb").read())
elif t == "serve":
    for p in payloads[:100]:
        body = open(p, "rb").read()
        put(b"POST /hook?agent=claude-code&event=PostToolUse HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Authorization: Bearer t\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)
    put(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    put(b"GET /handoff?workspace=w&project=p HTTP/1.1\r\nHost: localhost\r\nAuthorization: bearer t\r\n\r\n")
PY
}

for t in "${targets[@]}"; do
  seed "$t"
  echo "== fuzz $t for ${secs}s ($(ls fuzz/corpus/$t | wc -l) seeds)"
  (cd fuzz && cargo +nightly fuzz run -O "$t" -- -max_total_time="$secs" -rss_limit_mb=1024 -timeout=10 2>&1 \
     | tee "../fuzz/last-$t.log" | grep -E '^(#[0-9]+ +DONE|==[0-9]+==|SUMMARY|Done)|panicked' || true)
done
