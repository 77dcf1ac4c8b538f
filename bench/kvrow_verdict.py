"""Issue 9's verdict from `kvrow` lines (bench/gpu-phase-kvrow.sh): per thread count, the reps,
the range of KvikIO compat OFF through gdio's libcufile ÷ KvikIO compat ON (target 1.10) and,
with KVROW_BENCH=1, of OFF ÷ `gdio bench` of the same shape (target 0.95), and each ratio of
the medians over the reps (the median OFF over the median ON or bench: every sample is its own
process, and one process reads up to 15 % faster than the next on these VMs, session 47, so a
pair of single processes carries both sides' spread); then the weakest median ratio and the
weakest sample of each ratio over every row, which is the number to report. Where rows carry
the hypervisor's steal (the bench row's, KvikIO's ON and OFF: since session 48) and some
sample ran with STOLEN_PCT % or more of the CPUs taken, the weakest sample without those
follows (on these VMs they are the slow ones, BENCHMARKS.md session 48 run 5).

    python3 bench/kvrow_verdict.py KVROW_TXT [...]
"""

import re
import statistics
import sys
from collections import defaultdict

ROW = re.compile(
    r"^rep (?P<rep>\d+) t(?P<t>\d+) KvikIO ON (?P<on>\S+) \| OFF on gdio (?P<off>\S+)"
    r" \| ratio (?P<ratio>\S+)"
    r"(?: \| gdio bench 4M x \d+ (?P<bench>\S+) \| OFF / bench (?P<vs>\S+))?"
)
TARGETS = {"OFF / ON": 1.10, "OFF / bench": 0.95}
STEALS = re.compile(r"\| steal (?P<bench>\S+) %|KvikIO steal ON (?P<on>\S+) % OFF (?P<off>\S+) %")
STOLEN_PCT = 2.0


def stolen(line):
    """True when any steal the line gives (bench, KvikIO ON, KvikIO OFF) is STOLEN_PCT or more."""
    values = [number(v) for m in STEALS.finditer(line) for v in m.groups()]
    return any(v is not None and v >= STOLEN_PCT for v in values)


def number(text):
    """The float in `text`, or None for `failed`, `unverified` and the like."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def parse(lines):
    """{threads: {"reps": n, "OFF / ON": [...], "OFF / bench": [...], "ON": [...], "OFF": [...],
    "bench": [...], "failed": n}} from kvrow lines: the ratios and the GB/s of each side (only
    those measured); `failed` counts the ratios that could not be taken."""
    rows = defaultdict(
        lambda: {
            "reps": 0, "OFF / ON": [], "OFF / bench": [], "ON": [], "OFF": [], "bench": [], "failed": 0,
            "stolen": {"OFF / ON": [], "OFF / bench": []},
        }
    )
    for line in lines:
        m = ROW.match(line.strip())
        if not m:
            continue
        row = rows[int(m["t"])]
        row["reps"] += 1
        taken = stolen(line)
        for side in ("on", "off", "bench"):
            v = number(m[side])
            if v is not None:
                row["bench" if side == "bench" else side.upper()].append(v)
        ratio = number(m["ratio"])
        if ratio is None:
            row["failed"] += 1
        else:
            row["OFF / ON"].append(ratio)
            row["stolen"]["OFF / ON"].append(taken)
        if m["vs"] is not None:
            vs = number(m["vs"])
            if vs is None:
                row["failed"] += 1
            else:
                row["OFF / bench"].append(vs)
                row["stolen"]["OFF / bench"].append(taken)
    return dict(rows)


def span(values):
    return f"{min(values):.3f}–{max(values):.3f}" if values else "-"


def of_medians(row, other):
    """The median OFF over the median of `other` ("ON" or "bench") of one thread count, or None."""
    if not row["OFF"] or not row[other]:
        return None
    return round(statistics.median(row["OFF"]) / statistics.median(row[other]), 3)


MEDIANS = {"OFF / ON": "ON", "OFF / bench": "bench"}


def against(ratios, target):
    """Whether every one of `ratios` reaches `target`, in words: "holds" or "N of M below"."""
    below = sum(1 for v in ratios if v < target)
    return "holds" if below == 0 else f"{below} of {len(ratios)} below"


def weakest(samples, target):
    """The lowest of `samples` ((ratio, threads) pairs, at least one) against `target`, in words."""
    v, t = min(samples)
    return f"{v:.3f} at {t} threads (target {target:.2f}: {against([s for s, _ in samples], target)})"


def verdict(rows):
    """The table's lines, the weakest ratio of the medians, and last the weakest sample of each
    ratio against its target."""
    out = ["threads | reps | OFF / ON | OFF / bench | of medians: OFF / ON | OFF / bench | failed"]
    for t in sorted(rows):
        r = rows[t]
        on, vs = span(r["OFF / ON"]), span(r["OFF / bench"])
        med = [of_medians(r, other) for other in MEDIANS.values()]
        med = [f"{m:.3f}" if m is not None else "-" for m in med]
        out.append(f"{t} | {r['reps']} | {on} | {vs} | {med[0]} | {med[1]} | {r['failed']}")
    words = []
    for name, other in MEDIANS.items():
        meds = [(of_medians(r, other), t) for t, r in rows.items()]
        meds = [(m, t) for m, t in meds if m is not None]
        if meds:
            m, t = min(meds)
            words.append(f"{name} {m:.3f} at {t} threads (target {TARGETS[name]:.2f})")
    if words:
        out.append("weakest ratio of the medians over the reps: " + ", ".join(words))
    for name, target in TARGETS.items():
        samples = [(v, t) for t, r in rows.items() for v in r[name]]
        out.append(f"weakest {name}: {weakest(samples, target) if samples else 'no samples'}")
    for name, target in TARGETS.items():
        marked = [(v, t, s) for t, r in rows.items() for v, s in zip(r[name], r["stolen"][name])]
        taken = sum(1 for _, _, s in marked if s)
        if taken:
            calm = [(v, t) for v, t, s in marked if not s]
            out.append(
                f"weakest {name} without the {taken} of {len(marked)} samples run with {STOLEN_PCT:g} % "
                f"or more of the CPUs stolen: {weakest(calm, target) if calm else 'none left'}"
            )
    if any(r["failed"] for r in rows.values()):
        out.append("some rows failed: read stderr.txt beside kvrow.txt")
    return out


def read_lines(paths):
    """Every line of the files `paths`, in order."""
    lines = []
    for p in paths:
        with open(p) as f:
            lines += f.readlines()
    return lines


def main(paths):
    rows = parse(read_lines(paths))
    if not rows:
        print("no kvrow rows found", file=sys.stderr)
        return 1
    print("\n".join(verdict(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
