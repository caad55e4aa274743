#!/usr/bin/env bash
# Recall within a token budget (docs/BENCHMARKS-LOG.md, item 54): on every dev
# set, evidence recall of the ranked hits whole (recall@N) beside the same
# hits as `memory_search`'s budget takes them (fit@N: cut to their useful
# lines, repeats left out), and, over Markdown session notes, what automatic
# recall puts in the prompt within `[engine] recall_budget_tokens` (auto@N)
# and with whole files (auto@whole, auto_tokens@whole).
#
#   scripts/bench-budget.sh target/release/mnemo
#
# The data is read from $MNEMO_DATA_DIR (default ../shared/data); reports
# go to a temporary folder, never into the project. About 10 minutes on two
# cores.
set -euo pipefail
mnemo="$(realpath "${1:?usage: scripts/bench-budget.sh MNEMO}")"
root="$(cd "$(dirname "$0")/.." && pwd)"
data="$(realpath "${MNEMO_DATA_DIR:-$root/../shared/data}")"
out="$(mktemp -d)"
echo "reports in $out"
cd "$out"

eval_run() { # NAME ARGS...: one report, in a workspace of its own
  local name=$1
  shift
  rm -rf "ws-$name" && mkdir "ws-$name"
  "$mnemo" -w "ws-$name" eval retrieval "$@" --json >"$name.json" 2>"$name.err"
}

for layout in sessions notes; do
  eval_run "locomo-session-$layout" "$data/locomo_en.json" --unit session --layout "$layout" --queries embedded
  eval_run "locomo-turn-$layout" "$data/locomo_en.json" --unit turn --layout "$layout" --queries embedded
  for lang in en zh; do
    eval_run "mb-$lang-$layout" "$data/memorybank_$lang.json" --unit turn --layout "$layout" --queries embedded
  done
done
for q in question; do
  eval_run "locomo-session-$q" "$data/locomo_en.json" --unit session
  eval_run "locomo-turn-$q" "$data/locomo_en.json" --unit turn
  for lang in en zh; do
    eval_run "mb-$lang-$q" "$data/memorybank_$lang.json" --unit turn
  done
done

python3 - <<'PY'
import glob, json
cols = ["recall@500tok", "fit@500tok", "recall@1000tok", "fit@1000tok", "recall@2000tok",
        "fit@2000tok", "auto@500tok", "auto@1000tok", "auto@2000tok", "auto@whole",
        "auto_tokens@whole", "any@5", "all@10"]
print("| run | n | " + " | ".join(cols) + " |")
print("|---|---|" + "---|" * len(cols))
for f in sorted(glob.glob("*.json")):
    r = json.load(open(f))
    o = r["overall"]
    cells = []
    for c in cols:
        v = o.get(c)
        cells.append("" if v is None else (f"{v:.0f}" if c.startswith("auto_tokens") else f"{v:.3f}"))
    print(f"| {f[:-5]} | {r['counts']['questions_scored']} | " + " | ".join(cells) + " |")
PY
