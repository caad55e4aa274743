#!/usr/bin/env bash
# Runs the tests of the packages under packages/ against the mnemo binary
# the Rust tests built (target/debug/mnemo, or MNEMO_BIN), each with its
# own test.sh:
# - python/      the wheel built from the workspace (maturin, dev profile:
#                no second release build), installed into a fresh virtual
#                environment, its pytest suite (LangGraph and OpenAI Agents
#                adapters with the real libraries from PyPI);
# - typescript/  npm ci, tsc, node --test against a real `mnemo serve`;
# - openclaw/    the OpenClaw memory plugin in a real OpenClaw 2026.9.6 on
#                Node 24 (both from npm, cached outside the repository).
# Each skips with a note when its toolchain is missing, except in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
export MNEMO_BIN="${MNEMO_BIN:-$PWD/target/debug/mnemo}"
if ! [ -x "$MNEMO_BIN" ]; then
  cargo build -p mnemo-cli
fi
status=0
for pkg in python typescript openclaw; do
  started=$SECONDS
  echo "packages/$pkg: testing ..."
  if ./packages/$pkg/test.sh; then
    echo "packages/$pkg: passed in $((SECONDS - started)) s"
  else
    echo "packages/$pkg: FAILED after $((SECONDS - started)) s" >&2
    status=1
  fi
done
exit "$status"
