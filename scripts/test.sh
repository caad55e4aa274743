#!/usr/bin/env bash
# Runs the whole test suite: every crate's unit, integration and doc tests,
# the packages' tests (Python, TypeScript, the OpenClaw plugin) against the
# binary those built (scripts/test-packages.sh), then checks that the
# benchmarks still build (in the dev profile, reusing the
# test build, so CI does not compile every dependency a second time).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/fetch-models.sh >/dev/null
./scripts/fetch-peers.sh >/dev/null
export MNEMO_TEST_MODEL_DIR="${MNEMO_TEST_MODEL_DIR:-$PWD/.mnemo-models/all-MiniLM-L6-v2}"
cargo test --workspace --no-fail-fast
./scripts/test-packages.sh
cargo build --workspace --benches
