#!/usr/bin/env bash
# The Windows binaries end to end, under Wine (issue 27): every hook call
# exits 0 with a valid envelope in the failure modes; Windows and
# PowerShell spellings of a read of an excluded file leave no byte of it
# in the data dir; a recorded session's briefing appears at the next
# session start; memhook serve on loopback takes a hook's record over
# HTTP, and `memhook ui --stop` stops the server `ui` started; the installer writes the Codex PowerShell form and finds an
# agent's config under %USERPROFILE%.
#
# Usage: scripts/wine-e2e.sh [DIR]   DIR holds memhook.exe, memhook-session.exe, memhook-brief.exe
#        and memhook-cli.exe
#        (default: $CARGO_TARGET_DIR or target, x86_64-pc-windows-gnu/debug)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$here/../target}/x86_64-pc-windows-gnu/debug}"
run="$here/wine-runner.sh"
for exe in memhook.exe memhook-session.exe memhook-brief.exe memhook-cli.exe; do
    [[ -f "$bin/$exe" ]] || {
        echo "wine-e2e: $bin/$exe missing: run cargo build --target x86_64-pc-windows-gnu -p memhook --bins" >&2
        exit 1
    }
done
# Absolute: every call runs from the test project's directory, and the
# runner builds its dll beside the binary it is given.
bin="$(cd "$bin" && pwd)"

work="$(mktemp -d)"
serve_pid=""
wine_prefix="${MEMHOOK_WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/memhook-wine}"
# A server this script started is stopped by its pid however the script
# ends, and whatever still runs in the Wine prefix goes with it: on
# Windows `memhook` hands `serve` to memhook-cli.exe as a child (there is no
# exec), which outlives a kill of the `memhook` it was started by.
trap '[[ -n "$serve_pid" ]] && kill -9 "$serve_pid" 2>/dev/null; WINEPREFIX="$wine_prefix" wineserver -k 2>/dev/null; rm -rf "$work"' EXIT
proj="$work/proj"
data="$work/data"
mkdir -p "$proj/secret"
printf '[capture]\nignore_paths = ["secret/**"]\n' >"$proj/.ai-memory.toml"
secret="TOPSECRET-$RANDOM$RANDOM-key-material"
echo "$secret" >"$proj/secret/key.txt"
# Wine maps / to Z:, so Windows paths of the test files are Z:\....
win() { printf 'Z:%s' "${1//\//\\}"; }
wproj="$(win "$proj")"
export AI_MEMORY_DATA_DIR="$(win "$data")"
export AI_MEMORY_PROJECT=winproj

fails=0
ok() { echo "ok   $*"; }
# Failures are counted in a file: sections run in subshells.
bad() {
    echo "FAIL $*"
    echo x >>"$work/failures"
}

payload() { # event session [key value]... (values are JSON)
    python3 - "$wproj" "$@" <<'EOF'
import json, sys
cwd, event, session, *kv = sys.argv[1:]
p = {"session_id": session, "cwd": cwd, "hook_event_name": event}
for k, v in zip(kv[::2], kv[1::2]):
    p[k] = json.loads(v)
print(json.dumps(p))
EOF
}

# hook EVENT STDIN-FILE [extra args...]: run memhook.exe hook, check exit 0
# and one JSON object on stdout; the stdout is left in $work/out.
hook() {
    local event="$1" input="$2"
    shift 2
    local rc=0
    (cd "$proj" && "$run" "$bin/memhook.exe" hook --event "$event" --agent claude-code "$@") \
        <"$input" >"$work/out" 2>"$work/err" || rc=$?
    if [[ $rc -ne 0 ]]; then
        bad "hook $event $*: exit $rc ($(head -c 300 "$work/err"))"
        return
    fi
    if ! python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); assert isinstance(v, dict)' "$work/out" 2>/dev/null; then
        bad "hook $event $*: stdout is not one JSON object: $(head -c 300 "$work/out")"
        return
    fi
    ok "hook $event $* exits 0 with $(head -c 60 "$work/out")"
}

echo "== failure modes: exit 0 and an envelope"
echo 'this is not json' >"$work/bad.json"
: >"$work/empty.json"
hook PreToolUse "$work/bad.json"
hook SessionStart "$work/bad.json"
hook PreToolUse "$work/empty.json"
payload UserPromptSubmit s0 prompt '"hi"' >"$work/p0.json"
hook UserPromptSubmit "$work/p0.json" --no-such-flag
hook UserPromptSubmit "$work/p0.json" --event
echo "not a directory" >"$work/datafile"
(
    export AI_MEMORY_DATA_DIR="$(win "$work/datafile")"
    hook UserPromptSubmit "$work/p0.json"
    hook SessionStart "$work/p0.json"
)

# The rest of the Linux suite's failure modes (tests/integration/hook.rs),
# each with what stderr must say.
says() { # TEXT: the last hook's stderr holds TEXT
    if grep -qF -- "$1" "$work/err"; then
        ok "  and stderr says \"$1\""
    else
        bad "stderr does not say \"$1\": $(head -c 300 "$work/err")"
    fi
}
head -c 10000 /dev/urandom >"$work/binary.json"
hook PostToolUse "$work/binary.json"
says "not captured"
python3 -c 'import sys; sys.stdout.write("[" * 100000 + "]" * 100000)' >"$work/deep.json"
hook PostToolUse "$work/deep.json"
says "not captured"
echo '[1,2,3]' >"$work/array.json"
hook PostToolUse "$work/array.json"
says "not captured"
python3 -c 'import sys; sys.stdout.buffer.write(b"{\"tool_response\":\"" + b"x" * (9 * 1024 * 1024) + b"\"}")' >"$work/big.json"
hook PostToolUse "$work/big.json"
says "larger than 8 MiB"
(
    export MEMHOOK_TEST_PANIC=1
    hook PostToolUse "$work/p0.json"
    says "internal error"
)
(
    export MEMHOOK_START_BUDGET_MS=abc
    hook SessionStart "$work/p0.json"
    says "not a whole number"
)
hook SessionStart "$work/p0.json" --server-url http://127.0.0.1:9
hook UserPromptSubmit "$work/p0.json" --server-url http://127.0.0.1:9
# A marker that is not TOML: exit 0, and the policy counts as invalid,
# which keeps a shell tool's event as metadata only (DESIGN: "invalid
# policy: file and shell tools → metadata-only").
mkdir -p "$work/badmarker"
printf '[capture\nignore_paths = \n' >"$work/badmarker/.ai-memory.toml"
python3 -c 'import json, sys; print(json.dumps({"session_id": "s-bad", "cwd": sys.argv[1], "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "type notes.txt"}, "tool_response": {"stdout": "BADMARKER-OUTPUT-" + "KEPT-OUT", "stderr": ""}}))' \
    "$(win "$work/badmarker")" >"$work/badmarker.json"
hook PostToolUse "$work/badmarker.json"
says "not valid TOML"
if grep -rqa "BADMARKER-OUTPUT-KEPT-OUT" "$data" 2>/dev/null; then
    bad "a shell tool's output under a marker that is not TOML was kept (an invalid policy keeps metadata only)"
else
    ok "  and its output is nowhere in the data dir (an invalid policy keeps metadata only)"
fi
# An agent that stopped reading: the hook's write of its envelope fails,
# and it still exits 0.
rc=0
(cd "$proj" && "$run" "$bin/memhook.exe" hook --event UserPromptSubmit --agent claude-code \
    <"$work/p0.json" 2>"$work/err" | true; echo "${PIPESTATUS[0]}" >"$work/rc")
if [[ "$(cat "$work/rc")" == 0 ]]; then
    ok "an agent that stopped reading: the hook still exits 0"
else
    bad "an agent that stopped reading: exit $(cat "$work/rc"): $(head -c 300 "$work/err")"
fi
# Stdin left open: partial JSON and no EOF ends at the read deadline.
t0=$(date +%s%N)
{ printf '{"session_id":'; sleep 20; } |
    (cd "$proj" && timeout 30 "$run" "$bin/memhook.exe" hook --event Stop --agent claude-code \
        >"$work/out" 2>"$work/err"; echo $? >"$work/rc"; date +%s%N >"$work/t1")
took_ms=$((($(cat "$work/t1") - t0) / 1000000))
if [[ "$(cat "$work/rc")" == 0 ]] && [[ $took_ms -lt 12000 ]] && grep -q '^{' "$work/out"; then
    ok "stdin left open: exit 0 with $(head -c 20 "$work/out") after ${took_ms} ms"
    says "not closed"
else
    bad "stdin left open: exit $(cat "$work/rc") after ${took_ms} ms: $(head -c 200 "$work/out") $(head -c 200 "$work/err")"
fi

echo "== exclusions: Windows and PowerShell spellings"
n=0
for cmd in 'type secret\key.txt' 'Get-Content .\SECRET\key.txt' 'cmd /c type secret\key.txt' \
    'powershell -NoProfile -Command "gc .\Secret\key.txt"'; do
    n=$((n + 1))
    jcmd="$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$cmd")"
    payload PreToolUse s1 tool_name '"Bash"' tool_input "{\"command\": $jcmd}" >"$work/t$n.json"
    hook PreToolUse "$work/t$n.json"
    payload PostToolUse s1 tool_name '"Bash"' tool_input "{\"command\": $jcmd}" \
        tool_response "{\"stdout\": \"$secret\", \"stderr\": \"\", \"interrupted\": false}" >"$work/u$n.json"
    hook PostToolUse "$work/u$n.json"
done
read_path="$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$wproj\\Secret\\Key.txt")"
payload PostToolUse s1 tool_name '"Read"' tool_input "{\"file_path\": $read_path}" \
    tool_response "{\"type\": \"text\", \"file\": {\"filePath\": $read_path, \"content\": \"$secret\"}}" >"$work/r.json"
hook PostToolUse "$work/r.json"

echo "== a recorded session, then its briefing"
payload UserPromptSubmit s1 prompt '"please fix the parser"' >"$work/p1.json"
hook UserPromptSubmit "$work/p1.json"
payload Stop s1 last_assistant_message '"Fixed the parser: escapes are handled."' >"$work/p2.json"
hook Stop "$work/p2.json"
payload SessionStart s2 source '"startup"' >"$work/p3.json"
hook SessionStart "$work/p3.json"
if grep -q "please fix the parser" "$work/out" && grep -q "Fixed the parser" "$work/out"; then
    ok "the session-start briefing names the last goal and conclusion"
else
    bad "no briefing of session s1 at session start: $(head -c 400 "$work/out")"
fi
# Let the drainer finish before the data dir is searched.
for _ in $(seq 1 50); do
    compgen -G "$data/spool/*.json" >/dev/null || break
    sleep 0.2
done
if grep -r -a -l -F "$secret" "$data" >"$work/leaks"; then
    bad "the excluded file's bytes are in the data dir: $(tr '\n' ' ' <"$work/leaks")"
else
    ok "no byte of secret\\key.txt in the data dir ($(find "$data" -type f | wc -l) files searched)"
fi
if grep -r -a -q -F "please fix the parser" "$data"; then
    ok "the kept prompt is in the store (the search above looked at real data)"
else
    bad "the kept prompt is not in the data dir: nothing was delivered"
fi
echo "== memhook-brief.exe composes a briefing when none is kept ready"
# memhook.exe with memhook-brief.exe only: with the kept briefings removed
# (a cache), only memhook-brief.exe can compose one. Delivery at hook time
# off: this copy has no drainer to start.
mkdir -p "$work/brief-only"
cp "$bin/memhook.exe" "$bin/memhook-brief.exe" "$work/brief-only/"
rm -f "$data"/briefings/*.json
payload SessionStart s2b source '"startup"' >"$work/p3b.json"
(cd "$proj" && MEMHOOK_NO_HOOK_DELIVERY=1 "$run" "$work/brief-only/memhook.exe" hook --event SessionStart --agent claude-code) \
    <"$work/p3b.json" >"$work/out" 2>"$work/err" || true
if grep -q "please fix the parser" "$work/out" && compgen -G "$data/briefings/*.json" >/dev/null; then
    ok "memhook-brief.exe composed the briefing and kept it ready"
else
    bad "no briefing from memhook-brief.exe: $(head -c 300 "$work/out") $(head -c 300 "$work/err")"
fi

echo "== a briefing kept ready answers the next session start alone"
# memhook.exe copied alone: without its siblings beside it, only a
# briefing kept ready can brief. The drainer composes it again when it goes
# off duty after delivering the end of s2 (its deliveries made the one kept
# before stale). Asked before that, the try's own session start, once
# delivered, would rightly leave it stale: so wait until no record for the
# store is left in the spool and a kept briefing carries the store's
# generation, then ask once.
mkdir -p "$work/alone"
cp "$bin/memhook.exe" "$work/alone/"
# The end of s2 is what makes the drainer compose it again.
payload SessionEnd s2 reason '"exit"' >"$work/p5.json"
hook SessionEnd "$work/p5.json"
payload SessionStart s3 source '"startup"' >"$work/p4.json"
fresh() {
    python3 - "$data" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
# Records for the store still in the spool (a server's, which is down,
# stay there).
for f in glob.glob(os.path.join(d, "spool", "*.json")):
    try:
        if json.load(open(f))["sink"]["kind"] == "store":
            sys.exit(1)
    except (OSError, ValueError, KeyError):
        pass
try:
    gen = open(os.path.join(d, "store-generation")).read().strip()
except OSError:
    sys.exit(1)
for f in glob.glob(os.path.join(d, "briefings", "*.json")):
    try:
        if json.load(open(f))["stamp"]["generation"] == gen:
            sys.exit(0)
    except (OSError, ValueError, KeyError):
        pass
sys.exit(1)
PY
}
waited=0
until fresh; do
    if ((waited >= 60)); then
        bad "the drainer kept no briefing ready within 30 s of the end of s2"
        break
    fi
    sleep 0.5
    waited=$((waited + 1))
done
echo "    (kept ready after $((waited / 2)) s)"
kept=""
# MEMHOOK_NO_HOOK_DELIVERY: it starts no drainer (it has none beside it to
# start).
(cd "$proj" && MEMHOOK_NO_HOOK_DELIVERY=1 "$run" "$work/alone/memhook.exe" hook --event SessionStart --agent claude-code) \
    <"$work/p4.json" >"$work/out" 2>"$work/err" || true
grep -q "please fix the parser" "$work/out" && kept=yes
if [[ -n "$kept" ]]; then
    ok "memhook.exe alone printed the kept briefing of session s1"
else
    bad "no kept briefing answered session start: $(head -c 300 "$work/out") $(head -c 300 "$work/err")"
fi
# Control: the same read in a project that excludes nothing is captured,
# so the search above can see a leak.
mkdir -p "$work/open/secret"
echo '[capture]' >"$work/open/.ai-memory.toml"
(
    proj="$work/open"
    wproj="$(win "$proj")"
    export AI_MEMORY_PROJECT=winopen
    payload PostToolUse s9 tool_name '"Bash"' tool_input '{"command": "type secret\\key.txt"}' \
        tool_response "{\"stdout\": \"$secret-open\", \"stderr\": \"\", \"interrupted\": false}" >"$work/c.json"
    hook PostToolUse "$work/c.json"
)
for _ in $(seq 1 50); do
    grep -r -a -q -F "$secret-open" "$data" && break
    sleep 0.2
done
if grep -r -a -q -F "$secret-open" "$data"; then
    ok "control: without an exclusion the same output is captured"
else
    bad "control: a kept tool output never reached the data dir (the leak search proves nothing)"
fi
echo "== hooks killed at random moments: the books stay balanced"
(
    export AI_MEMORY_DATA_DIR="$(win "$work/crash")"
    export MEMHOOK_NO_HOOK_DELIVERY=1
    # How long one hook takes here (Wine's start-up included), so that the
    # kills land before, during and after the enqueue rather than all
    # after the hooks ended.
    # The shortest of three: the first call may also start Wine's server
    # (a second or more), and a span that long put most kills after the
    # hooks had ended (a CI run killed none in 6 rounds).
    payload UserPromptSubmit k0 prompt '"crash test timing"' >"$work/k0.json"
    span=""
    for _ in 1 2 3; do
        t0=$(date +%s%N)
        (cd "$proj" && "$run" "$bin/memhook.exe" hook --event UserPromptSubmit --agent claude-code \
            <"$work/k0.json" >/dev/null 2>&1) || true
        t=$((($(date +%s%N) - t0) / 1000000))
        [[ -z "$span" || $t -lt $span ]] && span=$t
    done
    ((span < 20)) && span=20
    : >"$work/killed"
    n=0
    # Rounds of 8 hooks, every other one killed at a random moment within
    # one hook's span, until at least 4 were killed mid-run (at most 6
    # rounds).
    for round in 1 2 3 4 5 6; do
        pids=()
        # Payloads first (a python3 start each): generated between the
        # starts, they spread the 8 hooks over a quarter of a second, and
        # the early ones had ended before their kill came.
        for j in $(seq 1 8); do
            payload UserPromptSubmit "k$((n + j))" prompt "\"crash test $((n + j))\"" >"$work/k$((n + j)).json"
        done
        for j in $(seq 1 8); do
            n=$((n + 1))
            (cd "$proj" && exec "$run" "$bin/memhook.exe" hook --event UserPromptSubmit --agent claude-code \
                <"$work/k$n.json" >/dev/null 2>&1) &
            pids+=($!)
        done
        for i in "${!pids[@]}"; do
            if ((i % 2 == 0)); then
                ms=$((RANDOM % span))
                (sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))" && kill -9 "${pids[$i]}" 2>/dev/null &&
                    echo "$n.$i" >>"$work/killed") &
            fi
        done
        wait || true
        (($(wc -l <"$work/killed") >= 4)) && break
    done
    killed=$(wc -l <"$work/killed")
    echo "    one hook took ${span} ms; $n hooks in $round rounds, $killed killed mid-run"
    ((killed > 0)) || bad "no hook was killed mid-run in $round rounds: the crash test proved nothing"
    (cd "$proj" && "$run" "$bin/memhook.exe" drain >"$work/drain.out" 2>&1) || true
    (cd "$proj" && "$run" "$bin/memhook.exe" status --json >"$work/status.json" 2>"$work/status.err") || true
    if python3 - "$work/status.json" <<'EOF2'; then
import json, sys
st = json.load(open(sys.argv[1]))
sinks = st["sinks"]
assert sinks and all(s["balanced"] for s in sinks), sinks
print("    " + "; ".join(f"{s.get('sink', s)}: " + ", ".join(f"{k} {s[k]}" for k in ("enqueued", "delivered", "pending") if k in s) for s in sinks))
EOF2
        ok "$n hooks, $killed killed mid-run (SIGKILL to the Wine process): status reports the books balanced"
    else
        bad "books after killed hooks: $(head -c 600 "$work/status.json") $(head -c 300 "$work/status.err")"
    fi
)

echo "== memhook serve on loopback, fed by a hook's HTTP sink"
srv="$work/srv"
mkdir -p "$srv"
: >"$work/serve.err"
(
    cd "$work"
    exec "$run" "$bin/memhook.exe" --data-dir "$(win "$srv")" serve --listen 127.0.0.1:0 --no-auth \
        </dev/null >/dev/null 2>"$work/serve.err"
) &
serve_pid=$!
addr=""
for _ in $(seq 1 300); do
    addr="$(sed -n 's/.*listening on http:\/\/\([^ ]*\).*/\1/p' "$work/serve.err" | head -n1)"
    [[ -n "$addr" ]] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
done
if [[ -z "$addr" ]]; then
    bad "memhook serve did not start: $(head -c 400 "$work/serve.err")"
else
    case "$addr" in
    127.0.0.1:*) ok "memhook serve listens on $addr (loopback only)" ;;
    *) bad "memhook serve listens on $addr, not on loopback" ;;
    esac
    word="SERVEDWORD$RANDOM$RANDOM"
    payload UserPromptSubmit s-srv prompt "\"keep $word for the team\"" >"$work/srv.json"
    hook UserPromptSubmit "$work/srv.json" --server-url "http://$addr"
    found=""
    for _ in $(seq 1 40); do
        "$run" "$bin/memhook.exe" drain >"$work/srv-drain.out" 2>&1 || true
        if "$run" "$bin/memhook.exe" --data-dir "$(win "$srv")" search --all "$word" \
            >"$work/srv-search.out" 2>&1 && grep -q "$word" "$work/srv-search.out"; then
            found=1
            break
        fi
        sleep 0.5
    done
    if [[ -n "$found" ]]; then
        ok "the hook's record reached the server's store ($word found by search there)"
    else
        # Everything that tells where the record stopped: the last drain,
        # the last search, the hook side's books, the server's log.
        "$run" "$bin/memhook.exe" status >"$work/srv-status.out" 2>&1 || true
        bad "the record never reached memhook serve at $addr
    last drain: $(head -c 600 "$work/srv-drain.out")
    last search: $(head -c 600 "$work/srv-search.out")
    status: $(head -c 1500 "$work/srv-status.out")
    serve: $(tail -c 600 "$work/serve.err")"
    fi
fi
# The server is stopped, whatever happened: the `memhook` started above by
# its pid (the Wine process), and the memhook-cli.exe it handed `serve` to
# (its child on Windows, not a replacement) by its image name: killing the
# parent alone left the server running (three of them, one per CI run,
# were found still listening).
kill -9 "$serve_pid" 2>/dev/null || true
wait "$serve_pid" 2>/dev/null || true
serve_pid=""
WINEPREFIX="$wine_prefix" WINEDEBUG=-all wine taskkill /F /IM memhook-cli.exe >/dev/null 2>&1 || true
if [[ -n "$addr" ]]; then
    gone=""
    for _ in $(seq 1 50); do
        if ! python3 -c 'import socket,sys; h,p=sys.argv[1].rsplit(":",1); socket.create_connection((h, int(p)), 1)' "$addr" 2>/dev/null; then
            gone=1
            break
        fi
        sleep 0.1
    done
    if [[ -n "$gone" ]]; then
        ok "memhook serve is stopped (its port is closed)"
    else
        bad "memhook serve still listens on $addr after it was stopped"
    fi
fi

echo "== memhook ui starts a server in the background; --stop ends it"
port=$((40000 + RANDOM % 20000))
rc=0
(cd "$work" && "$run" "$bin/memhook.exe" ui --no-open --listen "127.0.0.1:$port") \
    >"$work/ui.out" 2>"$work/ui.err" || rc=$?
if [[ $rc -eq 0 ]] && grep -q "started memhook serve on http://127.0.0.1:$port" "$work/ui.err"; then
    ok "memhook ui started memhook serve on 127.0.0.1:$port"
    rc=0
    (cd "$work" && "$run" "$bin/memhook.exe" ui --stop --listen "127.0.0.1:$port") \
        >"$work/out" 2>"$work/err" || rc=$?
    if [[ $rc -eq 0 ]] && grep -q "stopped memhook serve" "$work/err" &&
        ! python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)' "$port" 2>/dev/null; then
        ok "memhook ui --stop stopped it (the port is closed)"
    else
        bad "memhook ui --stop: exit $rc: $(head -c 300 "$work/err")"
        # Whatever runs in this Wine prefix goes with it.
        WINEPREFIX="$wine_prefix" wineserver -k || true
    fi
else
    bad "memhook ui: exit $rc: $(head -c 300 "$work/ui.err")"
fi

echo "== the installer's Windows command form (Codex runs hooks through PowerShell)"
(
    spaced="$work/Program Files/memhook"
    mkdir -p "$spaced" "$work/codex"
    cp "$bin/memhook.exe" "$bin/memhook-session.exe" "$bin/memhook-brief.exe" "$bin/memhook-cli.exe" "$spaced/"
    export CODEX_HOME="$(win "$work/codex")"
    inst() { (cd "$proj" && "$run" "$spaced/memhook.exe" "$@" 2>&1); }
    out="$(inst install-hooks --agent codex --apply)" || true
    # Warnings the installer gave (a ledger it could not write changes
    # what uninstall removes later).
    grep '^memhook:' <<<"$out" | sed 's/^/    install said: /' || true
    want="& 'Z:$work/Program Files/memhook/memhook.exe' "
    if grep -q -F -- "$want" "$work/codex/hooks.json" 2>/dev/null &&
        grep -q -F -- "hook --event session-start --agent codex\"" "$work/codex/hooks.json"; then
        ok "codex hooks.json runs $want … (call operator, / separators)"
    else
        bad "codex hooks.json lacks $want: $out $(head -c 400 "$work/codex/hooks.json" 2>/dev/null)"
    fi
    again="$(inst install-hooks --agent codex --apply)" || true
    if grep -q "already up to date" <<<"$again"; then
        ok "re-applying finds the written commands its own (already up to date)"
    else
        bad "re-apply: $again"
    fi
    rc=0
    gone="$(inst uninstall-hooks --agent codex --apply)" || rc=$?
    if grep -q "memhook" "$work/codex/hooks.json" 2>/dev/null; then
        # Everything needed to see why: what uninstall said and its status,
        # what a dry run would do now, and the file.
        bad "uninstall left memhook in hooks.json (exit $rc): $gone
    dry run now: $(inst uninstall-hooks --agent codex 2>&1 | head -c 600)
    hooks.json: $(head -c 300 "$work/codex/hooks.json")"
    else
        ok "uninstall-hooks removes them"
    fi
)

echo "== agents' configs on Windows: under %USERPROFILE%, whatever HOME says"
(
    # Wine sets USERPROFILE itself (C:\users\<user>, inside the prefix);
    # HOME is pointed elsewhere, as Git Bash may set it. The runner's
    # prefix is fixed first: its default is derived from HOME.
    prefix="${MEMHOOK_WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/memhook-wine}"
    export MEMHOOK_WINEPREFIX="$prefix"
    mkdir -p "$work/githome"
    export HOME="$(win "$work/githome")"
    profile="$prefix/drive_c/users/${USER:-$(id -un)}"
    gem="$profile/.gemini"
    if [[ -e "$gem" ]]; then
        bad "$gem exists already (left by an earlier run?): remove it and re-run"
        exit 0
    fi
    inst() { (cd "$proj" && "$run" "$bin/memhook.exe" "$@" 2>&1); }
    out="$(inst install-hooks --agent gemini-cli --apply)" || true
    if grep -q -F -- "--agent gemini-cli" "$gem/settings.json" 2>/dev/null &&
        [[ -z "$(ls -A "$work/githome")" ]]; then
        ok "install-hooks --agent gemini-cli wrote %USERPROFILE%\\.gemini\\settings.json, nothing under HOME"
    else
        bad "gemini-cli settings not under %USERPROFILE% ($gem): $out; under HOME: $(ls -A "$work/githome")"
    fi
    inst uninstall-hooks --agent gemini-cli --apply >/dev/null || true
    rm -rf "$gem"
)

if [[ -s "$data/logs/drain.log" ]]; then
    echo "drain.log:"
    sed 's/^/    /' "$data/logs/drain.log"
    grep -q "cannot" "$data/logs/drain.log" && bad "the drainer reported a failure"
fi

[[ -f "$work/failures" ]] && fails=$(wc -l <"$work/failures")
if [[ $fails -ne 0 ]]; then
    echo "wine-e2e: $fails failed" >&2
    exit 1
fi
echo "wine-e2e: all passed"
