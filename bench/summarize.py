#!/usr/bin/env python3
"""Reads the JSON lines of a bench run (gdio bench --json and kvikio_peer.py) and prints the
comparison table: gdio GB/s, the limit measured in the same run, the best KvikIO, and ratios."""
import json
import sys


def main():
    rows = []
    for line in open(sys.argv[1]):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    peers = {}
    for r in rows:
        if r.get("peer") == "kvikio":
            key = (r["op"] + r.get("variant", ""), r["path"])
            if key not in peers or r["gbps"] > peers[key]["gbps"]:
                peers[key] = r
    print(f"{'case':<34} {'gdio GB/s':>9} {'limit':>7} {'x limit':>7} {'kvikio':>7} {'thr':>4} {'x kvikio':>8} {'ok':>3}")
    for r in rows:
        if "results" not in r:
            continue
        label = r.get("label", "")
        path = r["setup"].get("file", "")
        for res in r["results"]:
            lim = None
            if res["op"] == "read":
                if res.get("cold"):
                    b, a = r["limits"].get("host_read_direct_gbps"), r["limits"].get("host_read_direct_after_gbps")
                    lim = (b + a) / 2 if (b and a) else b
                else:
                    lim = r["limits"].get("pinned_h2d_gbps")
            else:
                lim = r["limits"].get("pinned_d2h_gbps")
            # The row's own limit when the bench gives one (writes: a plain pwrite of host
            # memory into the same filesystem, same run).
            lim = res.get("limit_gbps") or lim
            p = peers.get((res["op"] + r.get("peer_variant", ""), path))
            pk = p["gbps"] if p else None
            print(f"{label + ' ' + res['op']:<34} {res['gbps']:>9.2f} {lim or 0:>7.2f} "
                  f"{(res['gbps'] / lim) if lim else 0:>7.2f} {pk or 0:>7.2f} {p['threads'] if p else '-':>4} "
                  f"{(res['gbps'] / pk) if pk else 0:>8.2f} {'yes' if res['verified'] else 'NO':>3}")
    for (op, path), p in sorted(peers.items()):
        print(f"kvikio best {op} {path}: {p['gbps']:.2f} GB/s with {p['threads']} threads (compat {p['compat_mode']})")


if __name__ == "__main__":
    main()
