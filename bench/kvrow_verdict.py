"""Issue 9's verdict from `kvrow` lines (bench/gpu-phase-kvrow.sh): per thread count, the reps,
the range of KvikIO compat OFF through gdio's libcufile ÷ KvikIO compat ON (target 1.10) and,
with KVROW_BENCH=1, of OFF ÷ `gdio bench` of the same shape (target 0.95); then the weakest
sample of each ratio over every row, which is the number to report.

    python3 bench/kvrow_verdict.py KVROW_TXT [...]
"""

import re
import sys
from collections import defaultdict

ROW = re.compile(
    r"^rep (?P<rep>\d+) t(?P<t>\d+) KvikIO ON (?P<on>\S+) \| OFF on gdio (?P<off>\S+)"
    r" \| ratio (?P<ratio>\S+)"
    r"(?: \| gdio bench 4M x \d+ \S+ \| OFF / bench (?P<vs>\S+))?"
)
TARGETS = {"OFF / ON": 1.10, "OFF / bench": 0.95}


def number(text):
    """The float in `text`, or None for `failed`, `unverified` and the like."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def parse(lines):
    """{threads: {"reps": n, "OFF / ON": [...], "OFF / bench": [...], "failed": n}} from kvrow
    lines; `failed` counts the ratios that could not be taken."""
    rows = defaultdict(lambda: {"reps": 0, "OFF / ON": [], "OFF / bench": [], "failed": 0})
    for line in lines:
        m = ROW.match(line.strip())
        if not m:
            continue
        row = rows[int(m["t"])]
        row["reps"] += 1
        ratio = number(m["ratio"])
        if ratio is None:
            row["failed"] += 1
        else:
            row["OFF / ON"].append(ratio)
        if m["vs"] is not None:
            vs = number(m["vs"])
            if vs is None:
                row["failed"] += 1
            else:
                row["OFF / bench"].append(vs)
    return dict(rows)


def span(values):
    return f"{min(values):.3f}–{max(values):.3f}" if values else "-"


def verdict(rows):
    """The table's lines; the last two name the weakest sample of each ratio against its target."""
    out = ["threads | reps | OFF / ON | OFF / bench | failed"]
    for t in sorted(rows):
        r = rows[t]
        on, vs = span(r["OFF / ON"]), span(r["OFF / bench"])
        out.append(f"{t} | {r['reps']} | {on} | {vs} | {r['failed']}")
    for name, target in TARGETS.items():
        samples = [(v, t) for t, r in rows.items() for v in r[name]]
        if not samples:
            out.append(f"weakest {name}: no samples")
            continue
        v, t = min(samples)
        below = sum(1 for s, _ in samples if s < target)
        state = "holds" if below == 0 else f"{below} of {len(samples)} below"
        out.append(f"weakest {name}: {v:.3f} at {t} threads (target {target:.2f}: {state})")
    if any(r["failed"] for r in rows.values()):
        out.append("some rows failed: read stderr.txt beside kvrow.txt")
    return out


def main(paths):
    lines = []
    for p in paths:
        with open(p) as f:
            lines += f.readlines()
    rows = parse(lines)
    if not rows:
        print("no kvrow rows found", file=sys.stderr)
        return 1
    print("\n".join(verdict(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
