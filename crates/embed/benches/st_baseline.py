#!/usr/bin/env python3
"""Python sentence-transformers baseline for crates/embed/benches/embed.rs.

Embeds the same sentences as the Rust benchmark (the first N turn texts of
LoCoMo, in file order) with sentence-transformers on CPU and prints
sentences per second.

usage: st_baseline.py MODEL_DIR [--n 512] [--batch-size 32] [--threads 2]
                      [--repeat 5] [--data-dir ../shared/data]
"""
import argparse
import json
import os
import statistics
import time


def sentences(data_dir, n):
    with open(os.path.join(data_dir, "locomo_en.json"), encoding="utf-8") as f:
        data = json.load(f)
    out = []
    for conv in data["conversations"]:
        for session in conv["sessions"]:
            for turn in session["turns"]:
                out.append(turn.get("text") or "")
                if len(out) == n:
                    return out
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_data = os.environ.get("MNEMO_DATA_DIR") or os.path.normpath(
        os.path.join(here, "..", "..", "..", "..", "shared", "data"))
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data-dir", default=default_data)
    args = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    model = SentenceTransformer(args.model_dir, device="cpu")
    a, b = model.encode(["A man is eating food.", "A man is eating a piece of bread."],
                        normalize_embeddings=True)
    print(f"reference cosine: {float((a * b).sum()):.4f} (expect 0.7553)")

    texts = sentences(args.data_dir, args.n)
    model.encode(texts[:64], batch_size=args.batch_size)  # warm-up
    rates = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True)
        rates.append(len(texts) / (time.perf_counter() - t0))
    print(f"torch {torch.__version__}, sentence-transformers threads={args.threads} "
          f"batch={args.batch_size} n={len(texts)}")
    print(f"sentences/s: median {statistics.median(rates):.1f}, best {max(rates):.1f}, "
          f"all {[round(r, 1) for r in rates]}")


if __name__ == "__main__":
    main()
