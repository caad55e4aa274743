#!/usr/bin/env python3
"""An independent MPNet forward pass in NumPy, written from the published
architecture (Hugging Face transformers' modeling_mpnet), used to obtain the
reference vectors that crates/embed/tests/mpnet.rs checks mnemo's fast
encoder against. It is slow and not part of the test run.

    pip install numpy tokenizers
    python3 scripts/mpnet_reference.py .mnemo-models/all-mpnet-base-v2 TEXTS

TEXTS is a file of texts separated by NUL bytes. For each text it prints the
first 8 values of the normalised mean-pooled vector, then the cosine of
every pair of texts.
"""
import json
import math
import struct
import sys

import numpy as np
from tokenizers import Tokenizer


def load(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])

    def tensor(name):
        meta = header[name]
        a, b = meta["data_offsets"]
        return np.frombuffer(raw[8 + n + a : 8 + n + b], dtype=np.float32).reshape(meta["shape"])

    return tensor


def bucket(rel, buckets=32, max_distance=128):
    # relative_position_bucket of modeling_mpnet, float32 like torch.
    ret, n, half = 0, -rel, buckets // 2
    ret += half if n < 0 else 0
    n = abs(n)
    exact = half // 2
    if n < exact:
        return ret + n
    ratio = np.float32(np.log(np.float32(n) / np.float32(exact))) / np.float32(math.log(max_distance / exact))
    return ret + min(exact + int(ratio * np.float32(half - exact)), half - 1)


def layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def embed(T, cfg, ids):
    heads, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
    hd, eps, L = hidden // heads, cfg["layer_norm_eps"], len(ids)
    pad = cfg["pad_token_id"]
    x = T("embeddings.word_embeddings.weight")[ids] + T("embeddings.position_embeddings.weight")[np.arange(L) + pad + 1]
    x = layer_norm(x, T("embeddings.LayerNorm.weight"), T("embeddings.LayerNorm.bias"), eps)
    table = T("encoder.relative_attention_bias.weight")
    bias = np.stack([table[[bucket(j - i) for j in range(L)]] for i in range(L)]).transpose(2, 0, 1)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."

        def lin(v, name):
            return v @ T(p + name + ".weight").T + T(p + name + ".bias")

        def split(v):
            return v.reshape(L, heads, hd).transpose(1, 0, 2)

        q, k, v = (split(lin(x, f"attention.attn.{n}")) for n in "qkv")
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + bias
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        c = (s @ v).transpose(1, 0, 2).reshape(L, hidden)
        x = layer_norm(lin(c, "attention.attn.o") + x, T(p + "attention.LayerNorm.weight"), T(p + "attention.LayerNorm.bias"), eps)
        m = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(lin(m, "output.dense") + x, T(p + "output.LayerNorm.weight"), T(p + "output.LayerNorm.bias"), eps)
    e = x.mean(0)
    return e / np.linalg.norm(e)


def main():
    folder, texts_file = sys.argv[1], sys.argv[2]
    cfg = json.load(open(folder + "/config.json"))
    max_len = json.load(open(folder + "/sentence_bert_config.json"))["max_seq_length"]
    tok = Tokenizer.from_file(folder + "/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(max_len)
    T = load(folder + "/model.safetensors")
    texts = open(texts_file, encoding="utf-8").read().split("\0")
    texts = [t for t in texts if t]
    vecs = [embed(T, cfg, tok.encode(t).ids) for t in texts]
    for t, v in zip(texts, vecs):
        print(len(tok.encode(t).ids), " ".join(f"{z:.6f}" for z in v[:8]))
    for i in range(len(vecs)):
        for j in range(i + 1, len(vecs)):
            print(i, j, f"{float(vecs[i] @ vecs[j]):.6f}")


if __name__ == "__main__":
    main()
