"""What the Python client adds to a warm search over the raw HTTP API.

    python bench/overhead.py [--calls 2000] [--rounds 5] [--url URL] [--json]

Starts a local `mnemo serve` on a temporary workspace (keyword search, a
few hundred memory lines), or uses the server at --url, then times the
same search three ways, one call at a time on a kept-alive connection:
a raw `http.client` request (the body encoded once, the answer's bytes
read and not parsed), `Memory.search` and `AsyncMemory.search`. The
rounds alternate between the three so that the machine's drift falls on
all of them alike. Prints the median per call of each, the client's
overhead over the raw request and the ratio, and the CPU time this
process spends per call each way (what the client itself costs, without
the server's share of the wall clock, which a busy machine blurs).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import statistics
import sys
import tempfile
import time
from urllib.parse import urlsplit

from pymnemo import AsyncMemory, Memory

QUERY = "what does the user drink in the morning?"


def seed(mem: Memory) -> None:
    drinks = ["green tea", "black coffee", "mate", "oat milk latte", "rooibos", "espresso"]
    lines = [
        f"Day {i}: the user drank {drinks[i % len(drinks)]} at {7 + i % 5}:00 and worked on task {i}."
        for i in range(300)
    ]
    for i in range(0, len(lines), 50):
        mem.write("\n".join(lines[i : i + 50]))
    mem.write("The user drinks green tea every morning, no sugar.", name="Morning drink", type="user")


def time_raw(url: str, calls: int) -> list[float]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port)
    body = json.dumps({"query": QUERY}).encode()
    headers = {"Content-Type": "application/json"}
    path = parts.path.rstrip("/") + "/memory/search"
    out = []
    clock = time.perf_counter
    for _ in range(calls):
        t = clock()
        conn.request("POST", path, body, headers)
        r = conn.getresponse()
        r.read()
        out.append(clock() - t)
        assert r.status == 200
    conn.close()
    return out


def time_client(mem: Memory, calls: int) -> list[float]:
    out = []
    clock = time.perf_counter
    search = mem.search
    for _ in range(calls):
        t = clock()
        search(QUERY)
        out.append(clock() - t)
    return out


async def time_async(amem: AsyncMemory, calls: int) -> list[float]:
    out = []
    clock = time.perf_counter
    for _ in range(calls):
        t = clock()
        await amem.search(QUERY)
        out.append(clock() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000, help="calls per round and way (2000)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (5)")
    ap.add_argument("--url", help="a running server instead of a local one")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()

    tmp = None
    if args.url:
        mem = Memory(url=args.url)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="mnemo-bench-")
        mem = Memory(workspace=tmp.name, settings={"embedder.kind": "none"})
        seed(mem)
    url = mem.url
    hits = len(mem.search(QUERY)["results"])
    loop = asyncio.new_event_loop()
    amem = AsyncMemory(url=url)

    raw: list[float] = []
    sync: list[float] = []
    asy: list[float] = []
    cpu = {"raw": 0.0, "sync": 0.0, "async": 0.0}
    # Warm every path (connections, the server's caches) before timing.
    time_raw(url, 200)
    time_client(mem, 200)
    loop.run_until_complete(time_async(amem, 200))
    for _ in range(args.rounds):
        c = time.process_time()
        raw += time_raw(url, args.calls)
        cpu["raw"] += time.process_time() - c
        c = time.process_time()
        sync += time_client(mem, args.calls)
        cpu["sync"] += time.process_time() - c
        c = time.process_time()
        asy += loop.run_until_complete(time_async(amem, args.calls))
        cpu["async"] += time.process_time() - c
    loop.run_until_complete(amem.aclose())
    loop.close()
    mem.close()
    if tmp is not None:
        tmp.cleanup()

    med = {k: statistics.median(v) * 1e6 for k, v in (("raw", raw), ("sync", sync), ("async", asy))}
    result = {
        "calls": len(raw),
        "hits": hits,
        "raw_us": round(med["raw"], 1),
        "client_us": round(med["sync"], 1),
        "async_client_us": round(med["async"], 1),
        "client_overhead_us": round(med["sync"] - med["raw"], 1),
        "async_overhead_us": round(med["async"] - med["raw"], 1),
        "client_ratio": round(med["sync"] / med["raw"], 3),
        "async_ratio": round(med["async"] / med["raw"], 3),
        "cpu_raw_us": round(cpu["raw"] / len(raw) * 1e6, 1),
        "cpu_client_us": round(cpu["sync"] / len(raw) * 1e6, 1),
        "cpu_async_client_us": round(cpu["async"] / len(raw) * 1e6, 1),
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"warm search, {result['hits']} hits, median of {result['calls']} calls each (µs per call)")
    r = result
    print(f"  raw http.client     {r['raw_us']:8.1f}")
    print(f"  Memory.search       {r['client_us']:8.1f}  +{r['client_overhead_us']:.1f} µs, x{r['client_ratio']}")
    print(f"  AsyncMemory.search  {r['async_client_us']:8.1f}  +{r['async_overhead_us']:.1f} µs, x{r['async_ratio']}")
    print("CPU time of this process per call (µs)")
    print(f"  raw http.client     {r['cpu_raw_us']:8.1f}")
    print(f"  Memory.search       {r['cpu_client_us']:8.1f}  +{r['cpu_client_us'] - r['cpu_raw_us']:.1f}")
    print(f"  AsyncMemory.search  {r['cpu_async_client_us']:8.1f}  +{r['cpu_async_client_us'] - r['cpu_raw_us']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
