#!/usr/bin/env bash
# Coverage-guided fuzzing: builds the fuzz crate (fuzz/, outside the
# workspace) with libFuzzer's instrumentation on the stable toolchain, then
# runs each target for SECS seconds (default 10), one at a time, and prints
# per target the executions, the coverage reached, the corpus size and the
# crashes. Exits non-zero when a target crashes (its input is saved under
# fuzz/artifacts/TARGET/) or does not build.
#
#   ./scripts/fuzz.sh                  # every target, 10 s each
#   ./scripts/fuzz.sh 600 http_routing # one target, 10 minutes
#   MNEMO_FUZZ_MERGE=1 ./scripts/fuzz.sh 600   # keep a minimised corpus
#
# Each run starts from the corpus kept in the repository
# (fuzz/corpus/TARGET/) and writes what it finds to a scratch folder, so
# the repository's corpus changes only with MNEMO_FUZZ_MERGE=1, which keeps
# a small set of inputs reaching every edge the corpus and the run reached
# (see merge_corpus). A crash input, once fixed, goes into the corpus as a
# regression seed. Reproduce a crash:
#   fuzz/target/HOST/release/TARGET fuzz/artifacts/TARGET/crash-…
set -uo pipefail
cd "$(dirname "$0")/.."

secs="${1:-10}"
shift || true
all=$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^mnemo-fuzz$')
targets="${*:-$all}"

host="$(rustc -vV | sed -n 's/^host: //p')"
# libFuzzer's instrumentation without nightly (what cargo-fuzz passes):
# edge counters, the PC table and comparison tracing. `--target` keeps the
# flags off build scripts and proc macros, which are not linked with
# libFuzzer.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
# The fuzz crate's own target folder, whatever the caller's setting: the
# instrumented build would otherwise replace the main one's artefacts.
export CARGO_TARGET_DIR="$PWD/fuzz/target"
bin_dir="$CARGO_TARGET_DIR/$host/release"
# shellcheck disable=SC2086
if ! cargo build --manifest-path fuzz/Cargo.toml --release --target "$host" \
  $(printf -- '--bin %s ' $targets); then
  echo "fuzz: the fuzz crate does not build" >&2
  exit 1
fi
unset RUSTFLAGS

# The corpus kept, plus what the run found, cut down to a small set that
# reaches every edge they reach (a greedy set cover, edges without hit
# counts): the repository keeps tens to a few hundred inputs, not thousands. The
# hand-written seeds (seed-*) and the inputs of fixed crashes (crash-*) stay
# whatever the cover picks.
merge_corpus() {
  local t="$1" min="$scratch/$1/min" f
  mkdir -p "$min"
  if ! TMPDIR="$scratch/$t/tmp" "$bin_dir/$t" -set_cover_merge=1 -use_counters=0 \
    -max_len=16384 -timeout=30 -rss_limit_mb=3072 \
    "$min" "fuzz/corpus/$t" "$scratch/$t/new" >"$scratch/$t/merge.log" 2>&1; then
    echo "fuzz $t: the merge failed, corpus unchanged"
    tail -n 5 "$scratch/$t/merge.log"
    return
  fi
  find "fuzz/corpus/$t" -type f ! -name 'seed-*' ! -name 'crash-*' -delete
  for f in "fuzz/corpus/$t"/*; do
    rm -f "$min/$(sha1sum <"$f" | cut -d' ' -f1)"
  done
  cp "$min"/* "fuzz/corpus/$t/" 2>/dev/null || true
  echo "fuzz $t: corpus merged, $(find "fuzz/corpus/$t" -type f | wc -l) files kept"
}

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=0
passed=0
for t in $targets; do
  mkdir -p "$scratch/$t/new" "$scratch/$t/tmp" "fuzz/artifacts/$t" "fuzz/corpus/$t"
  log="$scratch/$t/log"
  # The workspaces the request targets open live in TMPDIR: removed with
  # the scratch folder.
  TMPDIR="$scratch/$t/tmp" "$bin_dir/$t" \
    -max_total_time="$secs" -max_len=16384 -timeout=30 -rss_limit_mb=3072 \
    -dict="fuzz/dict/$t.dict" -print_final_stats=1 \
    -artifact_prefix="fuzz/artifacts/$t/" \
    "$scratch/$t/new" "fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
  # The last status line: "#N  REDUCE cov: C ft: F corp: K/…".
  status=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$status")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$status")
  kept=$(find "fuzz/corpus/$t" -type f | wc -l)
  found=$(find "$scratch/$t/new" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "fuzz $t: ${execs:-?} executions in ${took:-$secs} s, coverage ${cov:-?} edges ${ft:-?} features, corpus ${corp:-?} (${kept} kept, ${found} new), 0 crashes"
    if [ "${MNEMO_FUZZ_MERGE:-0}" = 1 ]; then
      merge_corpus "$t"
    fi
  else
    failed=$((failed + 1))
    echo "fuzz $t: CRASH after ${execs:-?} executions (exit $rc)"
    # The panic, the input that caused it and where libFuzzer saved it.
    grep -E "panicked at|^thread '|Test unit written to|^Base64:|ERROR: libFuzzer|SUMMARY" "$log" | head -n 20
    tail -n 30 "$log"
  fi
  rm -rf "$scratch/$t"
done
echo "fuzz: $passed passed, $failed crashed"
[ "$failed" -eq 0 ]
