"""nanobot's SessionManager on the workload of `mnemo bench session`.

Usage: python nanobot_session.py WORKSPACE APPENDS SYNCED_APPENDS LOAD_MESSAGES LOAD_RUNS
Prints one JSON object. Needs `pip install nanobot-ai`.
"""
import json
import statistics
import sys
import time
from pathlib import Path

from nanobot.session.manager import SessionManager


def sample(i):
    body = (
        f"turn {i}: we discussed the deployment plan for service-{i % 17} and agreed to roll out on Thursday; "
        f"remember the staging URL https://staging.example.com/{i} and the ticket OPS-{1000 + i}. 注意：周四发布。"
    )
    return ("user" if i % 2 == 0 else "assistant"), body


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, round((len(values) - 1) * p))]


def time_appends(ws, n, fsync):
    mgr = SessionManager(ws)
    s = mgr.get_or_create(f"bench:{'fsync' if fsync else 'nosync'}")
    role, body = sample(0)
    s.add_message(role, body)
    mgr.save(s, fsync=fsync)
    times = []
    for i in range(1, n + 1):
        role, body = sample(i)
        t = time.perf_counter()
        # A turn is recorded the way nanobot records it: add, then save.
        s.add_message(role, body)
        mgr.save(s, fsync=fsync)
        times.append((time.perf_counter() - t) * 1e6)
    return pct(times, 0.5), pct(times, 0.99)


def time_load(ws, n, runs):
    mgr = SessionManager(ws)
    s = mgr.get_or_create("bench:load")
    for i in range(n):
        role, body = sample(i)
        s.add_message(role, body)
    mgr.save(s)
    times = []
    for _ in range(max(1, runs)):
        fresh = SessionManager(ws)
        t = time.perf_counter()
        loaded = fresh.get_or_create("bench:load")
        times.append((time.perf_counter() - t) * 1e3)
        assert len(loaded.messages) == n, len(loaded.messages)
    return statistics.median(times)


def main():
    ws = Path(sys.argv[1])
    appends, synced, load_n, runs = (int(x) for x in sys.argv[2:6])
    ws.mkdir(parents=True, exist_ok=True)
    p50, p99 = time_appends(ws, appends, False)
    sp50, sp99 = time_appends(ws, synced, True)
    load_ms = time_load(ws, load_n, runs)
    print(json.dumps({
        "append_nosync_p50_us": p50, "append_nosync_p99_us": p99,
        "append_fsync_p50_us": sp50, "append_fsync_p99_us": sp99,
        "load_ms": load_ms, "appends": appends,
    }))


if __name__ == "__main__":
    main()
