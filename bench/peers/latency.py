#!/usr/bin/env python3
"""mnemo's own search latency on an indexed workspace, for issue 24's two
goals: warm `POST /v1/memory/search` on `mnemo serve` with the default
`[search] sync_on_search = true`, and the whole-process wall time of a cold
`mnemo search`.

The workspace is one `run.py` builds (`RUN/mnemo` under the peers' scratch
folder) or any other whose files are the notes of `run.py`
(`memory/notes/nNNNNN.md`, "The secret codename for project N is ..."):
the questions are run.py's, so top-3 correctness is counted too.

Variants are sets of `--set` options, measured in turn in every round (so a
busy machine slows them alike):

    python3 bench/peers/latency.py --mnemo target/debug/mnemo --workspace W \
        --variant on= --variant off=search.sync_on_search=false \
        --warm 300 --cold 10 --rounds 3

Each round and variant: `mnemo serve` is started, answers 5 warm-up
searches, then `--warm` timed searches (one client, keep-alive off, as
run.py; the server's CPU time over them is read from /proc), and is stopped; then `--cold` `mnemo search --json -n 3` processes
are timed one after the other (wall time, and the process's CPU time). It prints p50 / p95 / p99 per variant over
all rounds, and every cold run's time (the first cold search after more
than `[index] reconcile_secs` compares every file).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import free_port, holds, post, questions  # noqa: E402


def proc_cpu(pid):
    """User + system CPU seconds of a running process (Linux)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def fmt(xs):
    return f"p50 {pct(xs, 50) * 1e3:.1f} ms, p95 {pct(xs, 95) * 1e3:.1f} ms, p99 {pct(xs, 99) * 1e3:.1f} ms (n={len(xs)})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mnemo", required=True)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--notes", type=int, default=0, help="notes in the workspace (default: count memory/notes)")
    ap.add_argument("--variant", action="append", default=[], help="NAME=k=v[,k=v...] (NAME= for the defaults)")
    ap.add_argument("--warm", type=int, default=300)
    ap.add_argument("--cold", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    ws = os.path.abspath(a.workspace)
    n = a.notes or len(os.listdir(os.path.join(ws, "memory", "notes")))
    qs = questions(n, max(a.warm, a.cold, 1) * a.rounds, seed=13)
    variants = []
    for v in a.variant or ["default="]:
        name, _, sets = v.partition("=")
        args = []
        for kv in filter(None, sets.split(",")):
            args += ["--set", kv]
        variants.append((name or "default", args))
    res = {name: {"warm": [], "cold": [], "cpu": [], "warm_cpu": [], "ok_warm": 0, "ok_cold": 0} for name, _ in variants}
    qi = 0
    for r in range(a.rounds):
        for name, sets in variants:
            base = [os.path.abspath(a.mnemo), "--workspace", ws, *sets]
            if a.warm:
                port = free_port()
                srv = subprocess.Popen(
                    base + ["serve", "--http", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
                url = f"http://127.0.0.1:{port}/v1/memory/search"
                try:
                    for _ in range(600):
                        try:
                            post(url, {"query": "warm up"})
                            break
                        except Exception:
                            time.sleep(0.1)
                    for _ in range(4):
                        post(url, {"query": "warm up", "max_results": 3})
                    c0 = proc_cpu(srv.pid)
                    for k in range(a.warm):
                        i, q = qs[(qi + k) % len(qs)]
                        t = time.perf_counter()
                        hits = post(url, {"query": q, "max_results": 3})["results"]
                        res[name]["warm"].append(time.perf_counter() - t)
                        res[name]["ok_warm"] += holds([h["path"] for h in hits], i)
                    res[name]["warm_cpu"].append((proc_cpu(srv.pid) - c0) / a.warm)
                finally:
                    srv.kill()
                    srv.wait()
            for k in range(a.cold):
                i, q = qs[(qi + k) % len(qs)]
                ru = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                out = subprocess.run(base + ["search", q, "--json", "-n", "3"], capture_output=True, text=True)
                took = time.perf_counter() - t
                ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
                res[name]["cpu"].append(ru2.ru_utime + ru2.ru_stime - ru.ru_utime - ru.ru_stime)
                if out.returncode != 0:
                    raise RuntimeError(out.stderr[-2000:])
                res[name]["cold"].append(took)
                res[name]["ok_cold"] += holds([h["path"] for h in json.loads(out.stdout)["results"]], i)
            print(
                f"round {r + 1} {name}: warm {fmt(res[name]['warm'][-a.warm:] if a.warm else [])}; "
                f"cold runs (ms) {[round(x * 1e3) for x in res[name]['cold'][-a.cold:]]}",
                flush=True,
            )
        qi += max(a.warm, a.cold)
    print()
    for name, v in res.items():
        print(f"{name}: {n} notes")
        if v["warm"]:
            print(f"  warm POST /v1/memory/search: {fmt(v['warm'])}; top-3 correct {v['ok_warm']}/{len(v['warm'])}")
            cpu = ", ".join(f"{x * 1e3:.1f}" for x in v["warm_cpu"])
            print(f"    server CPU per search, each round: {cpu} ms")
        if v["cold"]:
            print(f"  cold mnemo search: {fmt(v['cold'])}; top-3 correct {v['ok_cold']}/{len(v['cold'])}")
            print(f"    mean {statistics.mean(v['cold']) * 1e3:.1f} ms, min {min(v['cold']) * 1e3:.1f} ms, max {max(v['cold']) * 1e3:.1f} ms")
            print(f"    CPU (user + system) per process: {fmt(v['cpu'])}")


if __name__ == "__main__":
    main()
