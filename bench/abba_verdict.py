"""The verdict of an `abba` phase (bench/gpu-phase-abba.sh): for each row (KvikIO compat OFF at
a thread count, `gdio bench` of a shape) each setting's GB/s per rep, its mean, its mean over
the first setting's (the baseline, listed first in ABBA_SETTINGS) and in how many reps it led
the baseline's sample of the same rep; then issue 9's ratios for every setting, per rep:
KvikIO compat OFF ÷ KvikIO compat ON at the same thread count (target 1.10) and OFF ÷ `gdio
bench` 4 MiB × the thread count (target 0.95), with the weakest sample. Samples that failed
(an empty or non-numeric rate) are counted, never read as zero. A sample during which the
hypervisor took at least STOLEN_PCT % of the CPUs (its `steal X%`) is marked `*`, and so is
a ratio either of whose sides was: on these VMs such samples are the slow ones (BENCHMARKS.md
session 48 run 5).

    python3 bench/abba_verdict.py ABBA_TXT [...]
"""

import os
import re
import statistics
import sys
from collections import defaultdict

# Issue 9's targets, the steal threshold and the readers are kvrow_verdict's (beside this file).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvrow_verdict import STOLEN_PCT, TARGETS, against, number, read_lines  # noqa: E402

OFF = re.compile(r"^rep (?P<rep>\d+) t(?P<t>\d+) KvikIO OFF on gdio (?P<setting>\S+): ?(?P<gbps>\S*)")
BENCH = re.compile(r"^rep (?P<rep>\d+) (?P<size>\S+) x (?P<depth>\d+) (?P<setting>\S+): ?(?P<gbps>\S*)")
ON = re.compile(r"^rep (?P<rep>\d+) t(?P<t>\d+) KvikIO ON: ?(?P<gbps>\S*)")
STEAL = re.compile(r" steal (?P<pct>[0-9.]+)%")


class Sample(float):
    """A sample's GB/s (a float) with the hypervisor's steal while it ran, in %, or None."""

    def __new__(cls, gbps, steal=None):
        s = super().__new__(cls, gbps)
        s.steal = steal
        return s

    @property
    def stolen(self):
        return self.steal is not None and self.steal >= STOLEN_PCT


def sample(gbps, text):
    """The Sample of a rate and the line it came from, or None for a failed one."""
    v = number(gbps)
    if v is None:
        return None
    m = STEAL.search(text)
    return Sample(v, float(m["pct"]) if m else None)


def mark(s):
    return f"{s:.2f}*" if s.stolen else f"{s:.2f}"


def parse(lines):
    """(samples, on, settings, failed): samples[row][setting][rep] = Sample with row
    ("OFF", threads) or ("bench", size, depth); on[threads][rep] = KvikIO ON's Sample; the
    settings in the order first seen; the count of samples without a rate."""
    samples = defaultdict(lambda: defaultdict(dict))
    on = defaultdict(dict)
    settings, failed = [], 0
    for raw in lines:
        text = raw.strip()
        m = ON.match(text)
        if m:
            v = sample(m["gbps"], text)
            if v is None:
                failed += 1
            else:
                on[int(m["t"])][int(m["rep"])] = v
            continue
        m = OFF.match(text)
        if m:
            row = ("OFF", int(m["t"]))
        else:
            m = BENCH.match(text)
            if not m:
                continue
            row = ("bench", m["size"], int(m["depth"]))
        if m["setting"] not in settings:
            settings.append(m["setting"])
        v = sample(m["gbps"], text)
        if v is None:
            failed += 1
        else:
            samples[row][m["setting"]][int(m["rep"])] = v
    return samples, on, settings, failed


def row_name(row):
    return f"KvikIO OFF t{row[1]}" if row[0] == "OFF" else f"gdio bench {row[1]} x {row[2]}"


def row_order(row):
    return (0, row[1], 0) if row[0] == "OFF" else (1, row[2], row[1])


def compare(samples, settings):
    """One line per row and setting: the reps' GB/s, the mean, and against the baseline (the
    first setting) the ratio of the means and the reps led."""
    out = ["row | setting | GB/s by rep | mean | ÷ baseline mean | reps led"]
    base = settings[0] if settings else None
    for row in sorted(samples, key=row_order):
        by = samples[row]
        for s in settings:
            reps = by.get(s, {})
            if not reps:
                continue
            mean = statistics.mean(reps.values())
            text = " / ".join(mark(reps[r]) for r in sorted(reps))
            vs, led = "-", "-"
            if s != base and by.get(base):
                vs = f"{mean / statistics.mean(by[base].values()):.3f}"
                paired = [r for r in reps if r in by[base]]
                led = f"{sum(1 for r in paired if reps[r] > by[base][r])} of {len(paired)}"
            out.append(f"{row_name(row)} | {s} | {text} | {mean:.2f} | {vs} | {led}")
    return out


def issue9(samples, on, settings):
    """Per setting, issue 9's samples: {name: [(ratio, threads, rep, stolen)]} for OFF ÷ ON and
    OFF ÷ `gdio bench` 4M x threads, where both sides of the same rep were measured; `stolen`
    when either side ran with the hypervisor taking STOLEN_PCT % or more."""
    out = {}
    for s in settings:
        ratios = {name: [] for name in TARGETS}
        for row, by in samples.items():
            if row[0] != "OFF":
                continue
            t = row[1]
            bench = samples.get(("bench", "4M", t), {}).get(s, {})
            for rep, off in by.get(s, {}).items():
                for name, other in (("OFF / ON", on.get(t, {})), ("OFF / bench", bench)):
                    if rep in other:
                        stolen = off.stolen or other[rep].stolen
                        ratios[name].append((round(off / other[rep], 3), t, rep, stolen))
        out[s] = ratios
    return out


def verdict(samples, on, settings, failed):
    """The comparison's lines, then issue 9's per setting: each thread count's samples and the
    weakest against its target."""
    out = compare(samples, settings)
    for s, ratios in issue9(samples, on, settings).items():
        for name, values in ratios.items():
            if not values:
                continue
            by_t = defaultdict(list)
            for v, t, rep, stolen in sorted(values, key=lambda x: (x[1], x[2])):
                by_t[t].append(f"{v:.3f}{'*' if stolen else ''}")
            spans = "; ".join(f"t{t} {' / '.join(v)}" for t, v in sorted(by_t.items()))
            low, t, rep, stolen = min(values)
            state = against([v for v, *_ in values], TARGETS[name])
            line = (
                f"issue 9 {name} with {s}: {spans}; weakest {low:.3f}{'*' if stolen else ''} at t{t} "
                f"rep {rep} (target {TARGETS[name]:.2f}: {state})"
            )
            calm = [v for v, _, _, st in values if not st]
            if len(calm) < len(values):
                line += f"; without * {min(calm):.3f}" if calm else "; every sample *"
            out.append(line)
    if any(x.stolen for by in samples.values() for reps in by.values() for x in reps.values()) or any(
        x.stolen for reps in on.values() for x in reps.values()
    ):
        out.append(f"* the hypervisor took {STOLEN_PCT:g} % or more of the CPUs while the sample ran")
    if failed:
        out.append(f"{failed} samples failed: read stderr.txt beside abba.txt")
    return out


def main(paths):
    samples, on, settings, failed = parse(read_lines(paths))
    if not samples:
        print("no abba rows found", file=sys.stderr)
        return 1
    print("\n".join(verdict(samples, on, settings, failed)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
