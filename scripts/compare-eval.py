#!/usr/bin/env python3
"""Compares two `mnemo eval retrieval --json` reports of the same questions.

For each metric: the mean of A, the mean of B, and B - A with its 95%
interval from a paired bootstrap over the questions (the same resample of
questions for both), so a change is told from noise. A change is noise when
its interval holds 0.

    scripts/compare-eval.py before.json after.json [metric ...]

A file holding a JSON array (`--mode all`) is matched report by report on
its mode and unit.
"""
import json
import random
import sys

DEFAULT = ["any@5", "all@10", "recall@10", "mrr", "recall@500tok", "recall@1000tok"]


def reports(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    items = data if isinstance(data, list) else [data]
    return {(r["mode"], r["unit"]): r for r in items}


def per_question(report, metric):
    out = {}
    for q in report["questions"]:
        value = q["metrics"].get(metric)
        if value is not None:
            out[q["qid"]] = value
    return out


def compare(a, b, metric, rounds=2000, seed=7):
    qa, qb = per_question(a, metric), per_question(b, metric)
    ids = sorted(set(qa) & set(qb))
    if not ids:
        return None
    xs = [qa[i] for i in ids]
    ys = [qb[i] for i in ids]
    n = len(ids)
    rng = random.Random(seed)
    diffs = []
    for _ in range(rounds):
        pick = [rng.randrange(n) for _ in range(n)]
        diffs.append(sum(ys[k] - xs[k] for k in pick) / n)
    diffs.sort()
    lo, hi = diffs[int(0.025 * rounds)], diffs[int(0.975 * rounds) - 1]
    return n, sum(xs) / n, sum(ys) / n, lo, hi


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    a_all, b_all = reports(sys.argv[1]), reports(sys.argv[2])
    metrics = sys.argv[3:] or DEFAULT
    for key in sorted(set(a_all) & set(b_all)):
        a, b = a_all[key], b_all[key]
        print(f"{key[0]} / {key[1]}")
        for m in metrics:
            r = compare(a, b, m)
            if r is None:
                continue
            n, ma, mb, lo, hi = r
            verdict = "noise" if lo <= 0 <= hi else ("better" if lo > 0 else "worse")
            print(
                f"  {m:<16} {ma:.3f} -> {mb:.3f}  "
                f"diff {mb - ma:+.3f} [{lo:+.3f}, {hi:+.3f}]  {verdict}  (n={n})"
            )


if __name__ == "__main__":
    main()
