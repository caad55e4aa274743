#!/usr/bin/env python3
"""Cold `mnemo search` processes of two builds side by side (issue 24).

Each round runs every binary with every variant in turn, so a busy machine
slows them alike, and prints the p50 wall time and the process's CPU time
(user + system) per binary and variant:

    python3 bench/cold_search.py --workspace W --bin old=OLD/mnemo --bin new=target/debug/mnemo \
        --variant walk=index.reconcile_secs=0 --variant default= --rounds 15

A variant is `NAME=k=v[,k=v...]` (`--set` options); `index.reconcile_secs=0`
makes every search compare every file with the index. The workspace is one
of `bench/peers/run.py`'s (notes "The secret codename for project N is ...").
"""

import argparse
import resource
import statistics
import subprocess
import time


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--bin", action="append", required=True, help="NAME=PATH")
    ap.add_argument("--variant", action="append", default=[], help="NAME=k=v[,k=v...]")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--notes", type=int, default=10000)
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bin]
    variants = [v.split("=", 1) for v in (a.variant or ["default="])]
    wall, cpu = {}, {}
    for r in range(a.rounds):
        query = "secret codename for project %d" % (r * 37 % a.notes)
        for name, path in bins:
            for vname, sets in variants:
                args = [path, "--workspace", a.workspace]
                for kv in filter(None, sets.split(",")):
                    args += ["--set", kv]
                args += ["search", "--json", "-n", "3", query]
                c0, t0 = cpu_children(), time.perf_counter()
                subprocess.run(args, stdout=subprocess.DEVNULL, check=True)
                wall.setdefault((name, vname), []).append(time.perf_counter() - t0)
                cpu.setdefault((name, vname), []).append(cpu_children() - c0)
    for key in wall:
        print(
            "%-8s %-10s wall p50 %7.1f ms   cpu p50 %7.1f ms   (n=%d)"
            % (key[0], key[1], statistics.median(wall[key]) * 1e3,
               statistics.median(cpu[key]) * 1e3, len(wall[key]))
        )


if __name__ == "__main__":
    main()
