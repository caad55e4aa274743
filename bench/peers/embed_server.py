#!/usr/bin/env python3
"""One OpenAI-compatible embedding server for every system in the peers
benchmark (`POST /v1/embeddings`), so that all of them embed with the same
function and the comparison measures the engines, not the models.

The vectors are feature-hashed words and character trigrams, L2-normalised
(the same idea as mnemo's `HashEmbedder`): deterministic, instant, not
semantic. Texts that share words get close vectors, which is what the
benchmark's questions need (they name the note's project).

    python3 embed_server.py --port 8790 --dims 384
"""

import argparse
import hashlib
import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORD = re.compile(r"\w+", re.UNICODE)


def embed(text, dims):
    v = [0.0] * dims
    words = WORD.findall(text.lower())
    for w in words or [""]:
        feats = [("w", w, 1.0)]
        padded = "<" + w + ">"
        feats += [("c3", padded[i : i + 3], 0.5) for i in range(max(len(padded) - 2, 0))]
        for kind, f, weight in feats:
            h = int.from_bytes(hashlib.blake2b((kind + "\0" + f).encode(), digest_size=8).digest(), "little")
            v[h % dims] += weight if (h >> 63) == 0 else -weight
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


class Handler(BaseHTTPRequestHandler):
    dims = 384
    calls = 0
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "hash-384", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        req = json.loads(self.rfile.read(length) or b"{}")
        inputs = req.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        dims = int(req.get("dimensions") or self.dims)
        data = [{"object": "embedding", "index": i, "embedding": embed(str(t), dims)} for i, t in enumerate(inputs)]
        with Handler.lock:
            Handler.calls += 1
        body = json.dumps(
            {
                "object": "list",
                "data": data,
                "model": req.get("model", "hash-384"),
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8790)
    ap.add_argument("--dims", type=int, default=384)
    a = ap.parse_args()
    Handler.dims = a.dims
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    print(f"embedding server on http://127.0.0.1:{a.port}/v1 ({a.dims} dims)", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
