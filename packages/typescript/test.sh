#!/usr/bin/env bash
# The TypeScript package's checks: install (npm ci), build (tsc), type-check
# the tests' usage, then run the tests with Node's test runner against a
# real `mnemo serve` from MNEMO_BIN (else mnemo on PATH). Without a binary
# or Node 20+, it skips, unless CI is set: then it fails.
set -euo pipefail
cd "$(dirname "$0")"

missing() {
  if [ -n "${CI:-}" ]; then
    echo "packages/typescript: $1 (CI is set: failing rather than skipping)" >&2
    exit 1
  fi
  echo "packages/typescript: skipped: $1" >&2
  exit 0
}

command -v node >/dev/null 2>&1 || missing "node is not installed (Node 20 or later)"
command -v npm >/dev/null 2>&1 || missing "npm is not installed"
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || missing "Node $major is too old (20 or later)"

bin="${MNEMO_BIN:-$(command -v mnemo || true)}"
[ -n "$bin" ] && [ -x "$bin" ] || missing "no mnemo binary: set MNEMO_BIN"
MNEMO_BIN="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
export MNEMO_BIN

npm ci --no-audit --no-fund --loglevel=error
npm run --silent build
npm run --silent typecheck
npm test
