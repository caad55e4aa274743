#!/usr/bin/env python3
"""Server benchmarks for mnemo-mcp / mnemo-http (see docs/BENCHMARKS.md).

1. Generates a seeded workspace of ~10k chunks (daily-log style notes with
   planted identifiers), indexes it with `mnemo index`.
2. memory_search round trip through a warm `mnemo mcp` (stdio): p50/p95.
3. HTTP search throughput of `mnemo serve` with 32 concurrent clients.
4. A cold `mnemo search` process: p50/p95 of whole-process wall time.

Usage: search_bench.py BIN WORKDIR [--embedder none|hash|local] [--model DIR]
"""
import http.client, json, os, random, statistics, subprocess, sys, threading, time

BIN, WORK = sys.argv[1], sys.argv[2]
KIND = sys.argv[sys.argv.index("--embedder") + 1] if "--embedder" in sys.argv else "none"
MODEL = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else None
FILES, PARAS = int(os.environ.get("FILES", "400")), int(os.environ.get("PARAS", "25"))

rng = random.Random(7)
WORDS = ("deploy review budget kitten invoice meeting rollout migration report tea coffee launch "
         "schedule ticket server backup Ana Bo Chen Dara river mountain garden window quarterly "
         "customer latency cache index search memory session vector keyword project feedback "
         "travel flight hotel Tuesday Friday morning evening weekly monthly plan risk decision").split()

def sets():
    s = ["--set", f"embedder.kind={KIND}"]
    if MODEL:
        s += ["--set", f"embedder.path={MODEL}"]
    return s

def mnemo(*args, **kw):
    return subprocess.run([BIN, "--workspace", WORK, *sets(), *args], check=True, capture_output=True, text=True, **kw)

def generate():
    if os.path.exists(os.path.join(WORK, "memory", "bench-0000.md")):
        return
    mnemo("init")
    for f in range(FILES):
        lines = [f"# Notes {f}", ""]
        for p in range(PARAS):
            words = [rng.choice(WORDS) for _ in range(rng.randint(70, 95))]
            words.insert(rng.randrange(len(words)), f"ID-{f:04d}-{p:02d}")
            lines += [f"## Entry {p}", "", " ".join(words), ""]
        with open(os.path.join(WORK, "memory", f"bench-{f:04d}.md"), "w") as fh:
            fh.write("\n".join(lines))

def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]

QUERIES = [f"ID-{rng.randrange(FILES):04d}-{rng.randrange(PARAS):02d}" if i % 2 else
           " ".join(rng.choice(WORDS) for _ in range(3)) for i in range(400)]

def bench_mcp(n=200):
    p = subprocess.Popen([BIN, "--workspace", WORK, *sets(), "mcp"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    def rpc(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        while True:
            m = json.loads(p.stdout.readline())
            if m.get("id") == i:
                return m
    rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}})
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    for i in range(5):  # warm: index open, embedder loaded
        rpc(1000 + i, "tools/call", {"name": "memory_search", "arguments": {"query": QUERIES[i]}})
    times, mode = [], None
    for i in range(n):
        t = time.perf_counter()
        r = rpc(i + 1, "tools/call", {"name": "memory_search", "arguments": {"query": QUERIES[i % len(QUERIES)]}})
        times.append((time.perf_counter() - t) * 1000)
        mode = r["result"]["structuredContent"]["mode"]
    p.kill()
    return times, mode

def bench_http(clients=32, seconds=10.0):
    port = 28000 + rng.randrange(2000)
    p = subprocess.Popen([BIN, "--workspace", WORK, *sets(), "serve", "--http", f"127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while "listening on" not in p.stderr.readline():
        pass
    done, lat, errors = [0] * clients, [[] for _ in range(clients)], [0]
    stop = time.perf_counter() + seconds
    def worker(k):
        c = http.client.HTTPConnection("127.0.0.1", port)
        i = k
        while time.perf_counter() < stop:
            body = json.dumps({"query": QUERIES[i % len(QUERIES)]})
            t = time.perf_counter()
            c.request("POST", "/v1/memory/search", body, {"Content-Type": "application/json"})
            r = c.getresponse(); r.read()
            if r.status != 200:
                errors[0] += 1
            lat[k].append((time.perf_counter() - t) * 1000)
            done[k] += 1
            i += clients
    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    [t.start() for t in ts]; [t.join() for t in ts]
    el = time.perf_counter() - t0
    p.kill()
    all_lat = [x for l in lat for x in l]
    return sum(done) / el, all_lat, errors[0]

def bench_cold(n=10):
    times = []
    for i in range(n):
        t = time.perf_counter()
        mnemo("search", "--json", QUERIES[i])
        times.append((time.perf_counter() - t) * 1000)
    return times

generate()
t = time.perf_counter(); mnemo("index"); print(f"index build: {time.perf_counter() - t:.1f} s")
print("status:", mnemo("status").stdout.strip().replace("\n", " | "))
times, mode = bench_mcp()
print(f"MCP stdio memory_search ({mode}), {len(times)} calls: p50 {pct(times, .5):.2f} ms, p95 {pct(times, .95):.2f} ms")
if "--no-http" not in sys.argv:
    rps, lat, errs = bench_http()
    print(f"HTTP /v1/memory/search, 32 clients: {rps:.0f} req/s, p50 {pct(lat, .5):.1f} ms, p95 {pct(lat, .95):.1f} ms, errors {errs}")
cold = bench_cold()
print(f"cold `mnemo search` process, {len(cold)} runs: p50 {pct(cold, .5):.0f} ms, p95 {pct(cold, .95):.0f} ms")
