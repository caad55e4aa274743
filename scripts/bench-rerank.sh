#!/usr/bin/env bash
# The re-rank and the question behind a dialogue, measured (docs/BENCHMARKS-LOG.md,
# item 51): what they gain on the dev sets, with paired intervals
# (scripts/compare-eval.py), and what they cost per question.
#
#   scripts/bench-rerank.sh target/release/mnemo [model flags...]
#
# The model flags pick the chat model as `mnemo chat` does (default: the
# local Qwen2.5-Coder-1.5B). The data is read from $MNEMO_DATA_DIR (default
# ../shared/data) and the subsets are written to a temporary folder, never
# into the project. Runs for about an hour on two cores.
set -euo pipefail
mnemo="$(realpath "${1:?usage: scripts/bench-rerank.sh MNEMO [model flags...]}")"
shift
model=("$@")
[ ${#model[@]} -gt 0 ] || model=(--set provider.kind=local)
root="$(cd "$(dirname "$0")/.." && pwd)"
data="$(realpath "${MNEMO_DATA_DIR:-$root/../shared/data}")"
out="$(mktemp -d)"
echo "reports in $out"
cd "$out"

eval_run() { # NAME ARGS...: one report, in a workspace of its own (no cached judgements)
  local name=$1
  shift
  rm -rf "ws-$name" && mkdir "ws-$name"
  "$mnemo" -w "ws-$name" eval retrieval "$@" --json >"$name.json" 2>"$name.err"
}
long=(--set engine.rerank_timeout_ms=600000 --set engine.recall_timeout_ms=60000)

# 1. Evidence recall at token budgets: BM25, vectors and hybrid side by side.
eval_run locomo-session "$data/locomo_en.json" --unit session --mode all
eval_run locomo-turn "$data/locomo_en.json" --unit turn --mode all
for lang in en zh; do
  eval_run "mb-$lang-question" "$data/memorybank_$lang.json" --unit turn --mode all
  eval_run "mb-$lang-dialogue" "$data/memorybank_$lang.json" --unit turn --queries embedded --mode all
done

# 2. LoCoMo subsets: every question the re-rank of 10 could move (evidence
# within the first 20 but not all of it in the first 5 / 10), and 150 others
# drawn at random (what it could break); 16 questions of the first
# conversation for the cost.
eval_run base "$data/locomo_en.json" --unit session
python3 - "$data/locomo_en.json" base.json <<'PY'
import json, random, sys
data = json.load(open(sys.argv[1]))
base = json.load(open(sys.argv[2]))
by_id = {q["qid"]: q for q in data["questions"]}
movable, rest = [], []
for q in base["questions"]:
    ranks = [r or 999 for r in q["evidence_ranks"]]
    m = q["metrics"]
    moves = (m["any@5"] < 1 and min(ranks) <= 20) or (m["all@10"] < 1 and max(ranks) <= 20)
    (movable if moves else rest).append(q["qid"])
random.seed(42)
first = [q["qid"] for q in data["questions"] if q["conv_id"] == data["conversations"][0]["conv_id"]]
for name, ids in [("movable", movable), ("others", random.sample(rest, 150)), ("cost", first[::5][:16])]:
    json.dump(dict(data, questions=[by_id[i] for i in ids]), open(name + ".set.json", "w"))
PY
eval_run movable-rerank movable.set.json --unit session --rerank "${model[@]}" "${long[@]}"
eval_run others-rerank others.set.json --unit session --rerank "${model[@]}" "${long[@]}"
for n in 4 6 8 10 20; do
  eval_run "cost-$n" cost.set.json --unit session --rerank "${model[@]}" "${long[@]}" \
    --set "engine.rerank_candidates=$n"
done

# 3. MemoryBank with the re-rank, and the question behind a dialogue.
for lang in en zh; do
  eval_run "mb-$lang-question-rerank" "$data/memorybank_$lang.json" --unit turn --rerank "${model[@]}" "${long[@]}"
  eval_run "mb-$lang-dialogue-need" "$data/memorybank_$lang.json" --unit turn --queries embedded \
    --need "${model[@]}" "${long[@]}"
done

cmp() { python3 "$root/scripts/compare-eval.py" "$@"; }
echo "== re-rank, LoCoMo sessions: the movable questions, then the others"
cmp base.json movable-rerank.json
cmp base.json others-rerank.json
for lang in en zh; do
  echo "== MemoryBank $lang: re-rank (questions), the question behind (dialogue)"
  # (compare-eval.py matches the hybrid report of each `--mode all` file)
  cmp "mb-$lang-question.json" "mb-$lang-question-rerank.json"
  cmp "mb-$lang-dialogue.json" "mb-$lang-dialogue-need.json"
done
echo "== cost per question (ms): passages judged, p50, p95"
for n in 4 6 8 10 20; do
  python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['timings']; print(sys.argv[2], round(t['search_ms_p50']), round(t['search_ms_p95']))" "cost-$n.json" "$n"
done
echo "== evidence recall at budgets"
python3 - <<'PY'
import json
for name in ["locomo-session", "locomo-turn", "mb-en-question", "mb-en-dialogue", "mb-zh-question", "mb-zh-dialogue"]:
    for r in json.load(open(name + ".json")):
        o = r["overall"]
        print(f"{name:16} {r['mode']:8}", " ".join(f"{o[k]:.3f}" for k in
              ["recall@500tok", "recall@1000tok", "recall@2000tok", "recall@4000tok", "any@5", "all@10"]))
PY
