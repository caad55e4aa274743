#!/usr/bin/env bash
# Runs every fuzz target (the tests named fuzz_*) for SECS seconds each
# (default 5), reusing the test build. Longer runs: `./scripts/fuzz.sh 600`.
# A crash fails the run and prints the input that caused it, shrunk, with
# the MNEMO_FUZZ_SEED that reproduces it.
set -uo pipefail
cd "$(dirname "$0")/.."
export MNEMO_FUZZ_SECS="${1:-5}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# One target at a time: each gets the whole budget.
cargo test --workspace --no-fail-fast fuzz_ -- --test-threads=1 --nocapture >"$log" 2>&1
rc=$?
# Each target's line ("fuzz NAME: N executions in S s, …"), and for a
# crash everything the driver printed about it.
grep -oE 'fuzz [a-z0-9-]+: [0-9]+ executions.*|panicked at.*|Smallest input.*|Original input.*|^b".*|^error(\[|:).*' "$log" || true
# A target that finishes prints its line; one that crashes, the driver's
# "fuzz target `NAME` panicked" message.
passed=$(grep -oE 'fuzz [a-z0-9-]+: [0-9]+ executions' "$log" | wc -l)
failed=$(grep -oE 'fuzz target `[a-z0-9-]+` panicked' "$log" | wc -l)
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  tail -n 40 "$log"
fi
echo "fuzz: $passed passed, $failed failed"
exit "$rc"
