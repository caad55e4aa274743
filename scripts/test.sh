#!/usr/bin/env bash
# Runs the whole test suite: every crate's unit, integration and doc tests,
# the packages' tests (Python, TypeScript, the OpenClaw plugin) against the
# binary those built (scripts/test-packages.sh), then checks that the
# benchmarks still build (in the dev profile, reusing the
# test build, so CI does not compile every dependency a second time) and
# that the library builds with each of its feature sets.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/fetch-models.sh >/dev/null
./scripts/fetch-peers.sh >/dev/null
export MNEMO_TEST_MODEL_DIR="${MNEMO_TEST_MODEL_DIR:-$PWD/.mnemo-models/all-MiniLM-L6-v2}"
cargo test --workspace --no-fail-fast
# The CLI's tests again, each workspace a database's instead of a folder
# (`mnemo --database URL --id ID`; crates/cli/tests/common/mod.rs reads
# their files wherever they are kept). The files listed are those whose
# tests know both kinds; the others work on folders alone. (mnemo-cli
# depends on every crate, so `-p mnemo-cli` resolves the features the
# workspace build above did and reuses it.)
if [ -n "${MNEMO_TEST_POSTGRES_URL:-}" ]; then
  MNEMO_TEST_CLI_DATABASE="$MNEMO_TEST_POSTGRES_URL" cargo test -p mnemo-cli \
    $(sed -n 's/^  \([a-z_]*\)$/--test \1/p' crates/cli/tests/on_database.txt) --no-fail-fast
fi
./scripts/test-packages.sh
cargo build --workspace --benches
# The library's feature sets (crates/mnemo/Cargo.toml) besides the default
# one built above: each index backend without the other, each feature
# built once (the first set compiles no model runtime at all). A build,
# not a check: the workspace-hack gives every third-party crate the
# features of the test build above, so only mnemo's own crates compile.
for features in sqlite postgres,local-llm,local-embed; do
  cargo build -p mnemo --no-default-features --features "$features"
done
