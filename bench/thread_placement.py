#!/usr/bin/env python3
"""Runs a command and watches where its threads run: every INTERVAL_MS (50) it reads each
thread's name, the CPU it last ran on and its CPU time (/proc/PID/task/*/stat and comm), and at
the end prints one JSON line on standard error:

  {"samples": n, "busy_share": {name-prefix: mean busy threads}, "cores_used": {prefix: n},
   "shared_core": share of busy thread-samples of PREFIX that ran on a core where another busy
   thread of the process ran in the same interval, "cpus": {cpu: busy samples},
   "group_cpus": {prefix: {cpu: busy samples of that group's threads}},
   "huge_madvised_kib": {"rss": n, "anon_huge": n}, "rc": exit}

huge_madvised_kib: the resident memory of the process's mappings that asked for huge pages
(MADV_HUGEPAGE, "hg" in smaps' VmFlags: gdio's pinned bounce buffers) and how much of it the
kernel backed with huge pages, read from /proc/PID/smaps every second (SMAPS_MS), the reading
with the most resident memory kept. Huge pages are a wish that a fragmented memory refuses.

A thread counts as busy in an interval when its CPU time grew in it. Threads are grouped by
their name up to the last "-" ("gdio-worker-3" and "gdio-worker-7" are "gdio-worker"). Cores come
from /sys/devices/system/cpu/cpuN/topology/core_id (with the package id), so two hyperthreads
of one core count as one core. The command's own output passes through.

usage: thread_placement.py [--prefix NAME] -- COMMAND...   (--prefix picks the group whose
       shared_core is reported; default: every group)
"""
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict


def core_of(cpu, cache={}):
    """(package, core) of a CPU number, or the CPU itself where sysfs does not say."""
    if cpu not in cache:
        base = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
        try:
            with open(base + "core_id") as f:
                core = int(f.read())
            with open(base + "physical_package_id") as f:
                pkg = int(f.read())
            cache[cpu] = (pkg, core)
        except OSError:
            cache[cpu] = (0, cpu)
    return cache[cpu]


def group(name):
    """The thread's group: its name up to the last '-' when a number follows it."""
    head, _, tail = name.rpartition("-")
    return head if head and tail.isdigit() else name


def threads(pid):
    """{tid: (group, cpu, cpu_ticks)} of the process now; {} once it is gone."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        # The name in parentheses may hold spaces: the fields start after the last ')'.
        fields = stat[stat.rindex(")") + 2:].split()
        # Fields 14 and 15 (utime, stime) and 39 (processor), counted from 1 with pid and comm
        # as fields 1 and 2, so index n - 3 here.
        out[tid] = (group(name), int(fields[36]), int(fields[11]) + int(fields[12]))
    return out


def madvised_huge(pid):
    """(rss KiB, AnonHugePages KiB) summed over the mappings with "hg" in VmFlags; None once
    the process is gone."""
    rss = huge = 0
    cur = {}
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("Rss", "AnonHugePages"):
                    cur[key] = int(rest.split()[0])
                elif key == "VmFlags":
                    if "hg" in rest.split():
                        rss += cur.get("Rss", 0)
                        huge += cur.get("AnonHugePages", 0)
                    cur = {}
    except (OSError, ValueError):
        return None
    return rss, huge


def main():
    args = sys.argv[1:]
    prefix = None
    if args[:1] == ["--prefix"]:
        prefix, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit(__doc__)
    interval = float(os.environ.get("INTERVAL_MS", "50")) / 1e3
    child = subprocess.Popen(args)
    last = {}
    samples = 0
    busy_sum = Counter()
    cores = defaultdict(set)
    shared = Counter()
    busy_total = Counter()
    cpus = Counter()
    group_cpus = defaultdict(Counter)
    every = max(1, round(float(os.environ.get("SMAPS_MS", "1000")) / 1e3 / interval))
    huge = (0, 0)
    tick = 0
    while child.poll() is None:
        time.sleep(interval)
        tick += 1
        if tick % every == 0:
            h = madvised_huge(child.pid)
            if h and h[0] >= huge[0]:
                huge = h
        now = threads(child.pid)
        busy = [(g, cpu) for tid, (g, cpu, ticks) in now.items() if tid in last and ticks > last[tid][2]]
        last = now
        if not busy:
            continue
        samples += 1
        on_core = Counter(core_of(cpu) for _, cpu in busy)
        for g, cpu in busy:
            busy_sum[g] += 1
            busy_total[g] += 1
            cores[g].add(core_of(cpu))
            cpus[cpu] += 1
            group_cpus[g][cpu] += 1
            if on_core[core_of(cpu)] > 1:
                shared[g] += 1
    groups = [prefix] if prefix else sorted(busy_total)
    report = {
        "samples": samples,
        "busy_share": {g: round(busy_sum[g] / max(samples, 1), 2) for g in groups},
        "cores_used": {g: len(cores[g]) for g in groups},
        "shared_core": {g: round(shared[g] / max(busy_total[g], 1), 3) for g in groups},
        "cpus": dict(sorted(cpus.items())),
        "group_cpus": {g: dict(sorted(group_cpus[g].items())) for g in groups},
        "huge_madvised_kib": {"rss": huge[0], "anon_huge": huge[1]},
        "rc": child.returncode,
    }
    print(json.dumps(report), file=sys.stderr)
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
