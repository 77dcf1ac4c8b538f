#!/usr/bin/env python3
"""The table of a sweep run (bench/sweep-h200.sh): for each filesystem and row, gdio GB/s, the
limit measured in the same run, gdio ÷ limit, the best KvikIO over its thread counts, and
gdio ÷ KvikIO; then the weakest row of each filesystem against its limit and against KvikIO.

usage: sweep_summary.py results.jsonl
"""
import json
import sys


def main():
    gdio, peers = [], {}
    for line in open(sys.argv[1]):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if r.get("peer") == "kvikio" and r.get("op") in ("sweep", "sweep-write"):
            key = (r["fs"], "write" if r["op"] == "sweep-write" else "read", r["label"])
            if key not in peers or r["gbps"] > peers[key]["gbps"]:
                peers[key] = r
        elif "results" in r and r.get("summary"):
            gdio.append(r)
        elif "error" in r:
            print(f"gdio error: {r['error']}")
    print(f"{'fs':<6} {'op':<5} {'row':<20} {'gdio GB/s':>9} {'IOPS':>10} {'limit':>7} {'÷limit':>7} "
          f"{'KvikIO':>7} {'thr':>4} {'÷KvikIO':>8} {'ok':>3}")
    for run in gdio:
        fs = run.get("fs", "?")
        worst_limit, worst_peer = None, None
        for res in run["results"]:
            label = res.get("label", "?")
            p = peers.get((fs, res["op"], label))
            ratio_l = res.get("ratio_to_limit")
            ratio_p = res["gbps"] / p["gbps"] if p else None
            ok = res["verified"] and (p is None or p["verified_sample"])
            print(f"{fs:<6} {res['op']:<5} {label:<20} {res['gbps']:>9.2f} {res['iops']:>10.0f} "
                  f"{res.get('limit_gbps') or 0:>7.2f} {ratio_l or 0:>7.2f} {p['gbps'] if p else 0:>7.2f} "
                  f"{p['threads'] if p else '-':>4} {ratio_p or 0:>8.2f} {'yes' if ok else 'NO':>3}")
            if ratio_l is not None and (worst_limit is None or ratio_l < worst_limit[1]):
                worst_limit = (f"{res['op']} {label}", ratio_l)
            if ratio_p is not None and (worst_peer is None or ratio_p < worst_peer[1]):
                worst_peer = (f"{res['op']} {label}", ratio_p)
        print(f"{fs}: {run['summary']}")
        if worst_peer:
            print(f"{fs}: weakest row against KvikIO: {worst_peer[0]} at {worst_peer[1]:.2f} x KvikIO")
        lim = run["limits"]
        print(f"{fs}: limits {json.dumps(lim)}")


if __name__ == "__main__":
    main()
