#!/usr/bin/env python3
"""Where a lone caller's read goes, from an Nsight Systems trace (exported to SQLite) of
sequential cuFileRead calls through gdio's libcufile (bench/cufile-loop.c with one thread):
every host->device copy the engine queued, when its API call was made, when the GPU started and
ended it. Copies are grouped into calls by their bytes: each call's copies add up to CALL_BYTES
(the loop's chunk; one caller, so calls do not overlap).

usage: nsys_lone_read.py TRACE.sqlite CALL_BYTES
Prints, per call (medians over calls, microseconds): copies per call; from the call's first copy
queued to its last queued; each copy's wait from queueing to its GPU start and its time on the
GPU; the last copy's landing after its queueing; and the time from one call's last landing to
the next call's first copy queued (the caller woken, the call returned, the next call made, its
first part read).
"""
import sqlite3
import statistics
import sys


def strings(db):
    try:
        return dict(db.execute("SELECT id, value FROM StringIds"))
    except sqlite3.Error:
        return {}


def main():
    db = sqlite3.connect(sys.argv[1])
    call_bytes = int(sys.argv[2])
    names = strings(db)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "CUPTI_ACTIVITY_KIND_MEMCPY" not in tables or "CUPTI_ACTIVITY_KIND_RUNTIME" not in tables:
        print("tables:", sorted(tables))
        return 1
    # copyKind 1: host to device.
    copies = db.execute(
        "SELECT correlationId, start, end, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY "
        "WHERE copyKind = 1 ORDER BY start").fetchall()
    api = {}
    for corr, start, name_id in db.execute(
            "SELECT correlationId, start, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
        api[corr] = (start, names.get(name_id, str(name_id)))
    rows = []
    for corr, start, end, nbytes in copies:
        if corr not in api:
            continue
        rows.append((api[corr][0], start, end, nbytes))
    rows.sort()
    if not rows:
        print("no host->device copies with an API call")
        return 1
    # Group into calls by bytes (a short last call at the end of the file closes its group too).
    calls, cur, got = [], [], 0
    for r in rows:
        cur.append(r)
        got += r[3]
        if got >= call_bytes:
            calls.append(cur)
            cur, got = [], 0
    if cur:
        calls.append(cur)
    # Skip the first and last few (warm-up, exit).
    body = calls[5:-5] if len(calls) > 20 else calls
    us = lambda v: round(statistics.median(v) / 1e3, 1)
    per = [len(c) for c in body]
    print(f"{len(rows)} copies in {len(calls)} calls; copies per call: median {statistics.median(per)}, "
          f"sizes {sorted({c[3] for c in rows})[:6]}")
    print("queue span (first to last copy queued):", us([c[-1][0] - c[0][0] for c in body]))
    for i in range(max(per)):
        sel = [c[i] for c in body if len(c) > i]
        print(f"copy {i}: queued->GPU start {us([r[1] - r[0] for r in sel])}, on GPU {us([r[2] - r[1] for r in sel])}, "
              f"queued->end {us([r[2] - r[0] for r in sel])}  ({len(sel)} calls)")
    nxt = [b[0][0] - a[-1][2] for a, b in zip(body, body[1:])]
    print("last landing -> next call's first copy queued:", us(nxt))
    print("first copy queued -> next call's first copy queued (a call):", us([b[0][0] - a[0][0] for a, b in zip(body, body[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
