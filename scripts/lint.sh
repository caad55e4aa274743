#!/usr/bin/env bash
# The gates CI runs besides the tests (README: "Run the tests"), cheapest
# first: formatting, no declared dependency that the code does not use, and
# clippy on every target with every warning an error (the workspace denies
# unwrap/expect outside tests, see [workspace.lints.clippy] in Cargo.toml).
# Runs all three and fails at the end if any failed, so one run shows every
# problem. Installs cargo-machete from crates.io when it is missing or
# another version.
set -euo pipefail
cd "$(dirname "$0")/.."

MACHETE_VERSION=0.9.2
failed=()

cargo fmt --all --check || failed+=("cargo fmt --all --check (run cargo fmt --all)")

if [ "$(cargo-machete --version 2>/dev/null || true)" != "$MACHETE_VERSION" ]; then
  cargo install cargo-machete --version "$MACHETE_VERSION" --locked
fi
# A dependency used only through a macro that cargo-machete cannot see is
# listed, with the reason, under [package.metadata.cargo-machete] in its
# crate's Cargo.toml.
# The workspace-hack crate (crates/workspace-hack, `cargo hakari`) declares
# dependencies only for their features: it is left out.
# shellcheck disable=SC2046
cargo machete $(ls -d crates/*/ | grep -v '^crates/workspace-hack/$') \
  || failed+=("cargo machete (unused dependencies)")

# A check build of the dependencies (no code generation); the build scripts
# and proc macros it compiles are the ones the test build reuses.
cargo clippy --workspace --all-targets -- -D warnings || failed+=("cargo clippy")

if [ "${#failed[@]}" -gt 0 ]; then
  printf 'lint failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
