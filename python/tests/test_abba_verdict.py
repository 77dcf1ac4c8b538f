"""bench/abba_verdict.py, which sums up an `abba` phase: rows parsed as the phase prints them
(settings in ABBA order, the even reps reversed), each setting's mean against the baseline's
and the reps it led, issue 9's ratios per setting with the weakest sample, samples that ran
while the hypervisor took the CPUs marked, and failed samples counted instead of read as
zero."""

import importlib.util
import pathlib
import random
import statistics

REPO = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("abba_verdict", REPO / "bench" / "abba_verdict.py")
av = importlib.util.module_from_spec(spec)
spec.loader.exec_module(av)

SETTINGS = ["GDIO_X=0", "GDIO_X=1,GDIO_Y=2"]
THREADS = [4, 8]


def off_line(rep, t, s, gbps, steal="-"):
    return f"rep {rep} t{t} KvikIO OFF on gdio {s}: {gbps:.2f} best {gbps + 0.5:.2f} steal {steal}% verified True passes [1.0]\n"


def bench_line(rep, depth, s, gbps, steal="0.1"):
    return f"rep {rep} 4M x {depth} {s}: {gbps:.2f} read-ahead 3 split 10 helped 2 early 0 split_wait 1% idle 9% steal {steal}% verified True\n"


def random_phase(seed, reps=4):
    """The phase's lines and the numbers behind them: off[(t, s, rep)], bench[(t, s, rep)],
    on[(t, rep)]."""
    rng = random.Random(seed)
    lines, off, bench, on = ["rep 1: a line the verdict ignores\n"], {}, {}, {}
    for rep in range(1, reps + 1):
        order = SETTINGS if rep % 2 else SETTINGS[::-1]
        for s in order:
            for t in THREADS:
                off[(t, s, rep)] = round(rng.uniform(10, 50), 2)
                lines.append(off_line(rep, t, s, off[(t, s, rep)]))
            for t in THREADS:
                bench[(t, s, rep)] = round(rng.uniform(10, 50), 2)
                lines.append(bench_line(rep, t, s, bench[(t, s, rep)]))
        for t in THREADS:
            on[(t, rep)] = round(rng.uniform(10, 50), 2)
            lines.append(f"rep {rep} t{t} KvikIO ON: {on[(t, rep)]:.2f} best 1.00 verified True passes [1.0]\n")
    return lines, off, bench, on


def test_each_setting_is_set_against_the_baseline_rep_by_rep():
    lines, off, bench, on = random_phase(48)
    samples, on_rows, settings, failed = av.parse(lines)
    assert settings == SETTINGS and failed == 0
    out = av.verdict(samples, on_rows, settings, failed)
    for t in THREADS:
        for name, values in (("KvikIO OFF t%d" % t, off), ("gdio bench 4M x %d" % t, bench)):
            base = [values[(t, SETTINGS[0], r)] for r in range(1, 5)]
            other = [values[(t, SETTINGS[1], r)] for r in range(1, 5)]
            led = sum(1 for a, b in zip(base, other) if b > a)
            ratio = statistics.mean(other) / statistics.mean(base)
            want = (
                f"{name} | {SETTINGS[1]} | {' / '.join(f'{v:.2f}' for v in other)} | "
                f"{statistics.mean(other):.2f} | {ratio:.3f} | {led} of 4"
            )
            assert want in out, (want, out)
            assert f"{name} | {SETTINGS[0]} | {' / '.join(f'{v:.2f}' for v in base)} | " in "\n".join(out)


def test_issue_nine_ratios_pair_the_same_rep_and_name_the_weakest():
    lines, off, bench, on = random_phase(49)
    out = av.verdict(*av.parse(lines))
    for s in SETTINGS:
        for name, other, target in (("OFF / ON", on, 1.10), ("OFF / bench", bench, 0.95)):
            ratios = []
            for t in THREADS:
                for rep in range(1, 5):
                    below = other[(t, rep)] if name == "OFF / ON" else other[(t, s, rep)]
                    ratios.append((round(off[(t, s, rep)] / below, 3), t, rep))
            line = next(o for o in out if o.startswith(f"issue 9 {name} with {s}: "))
            for t in THREADS:
                mine = " / ".join(f"{v:.3f}" for v, tt, _ in sorted(ratios, key=lambda x: x[2]) if tt == t)
                assert f"t{t} {mine}" in line, (mine, line)
            low, t, rep = min(ratios)
            n = sum(1 for v, _, _ in ratios if v < target)
            state = "holds" if n == 0 else f"{n} of {len(ratios)} below"
            assert line.endswith(f"weakest {low:.3f} at t{t} rep {rep} (target {target:.2f}: {state})"), line


def test_a_failed_sample_is_counted_not_read_as_zero():
    lines, off, bench, on = random_phase(50, reps=2)
    # KvikIO's script failed for one OFF sample and one ON sample: the phase prints no rate.
    dead = off_line(2, 4, SETTINGS[1], off[(4, SETTINGS[1], 2)])
    lines[lines.index(dead)] = f"rep 2 t4 KvikIO OFF on gdio {SETTINGS[1]}: \n"
    on_dead = next(l for l in lines if l.startswith("rep 1 t8 KvikIO ON:"))
    lines[lines.index(on_dead)] = "rep 1 t8 KvikIO ON: \n"
    samples, on_rows, settings, failed = av.parse(lines)
    assert failed == 2
    assert samples[("OFF", 4)][SETTINGS[1]] == {1: off[(4, SETTINGS[1], 1)]}
    assert 1 not in on_rows[8]
    out = av.verdict(samples, on_rows, settings, failed)
    assert out[-1] == "2 samples failed: read stderr.txt beside abba.txt"
    row = next(o for o in out if o.startswith(f"KvikIO OFF t4 | {SETTINGS[1]} | "))
    assert row.endswith("| 1 of 1") or row.endswith("| 0 of 1"), row
    assert f"{off[(4, SETTINGS[1], 1)]:.2f} | {off[(4, SETTINGS[1], 1)]:.2f} |" in row


def test_no_rows_is_an_error(tmp_path, capsys):
    empty = tmp_path / "abba.txt"
    empty.write_text("rep 1: no time left\n")
    assert av.main([str(empty)]) == 1
    assert "no abba rows" in capsys.readouterr().err


def test_samples_the_hypervisor_took_the_cpus_from_are_marked():
    base, other = SETTINGS
    lines = [
        off_line(1, 4, base, 30.0, "0.4"),
        off_line(1, 4, other, 20.0, "10.1"),
        bench_line(1, 4, base, 28.0, "0.2"),
        bench_line(1, 4, other, 29.0, "1.9"),
        "rep 1 t4 KvikIO ON: 25.00 best 26.00 steal 0.0% verified True passes [1.0]\n",
        off_line(2, 4, other, 33.0, "0.3"),
        off_line(2, 4, base, 31.0),
        bench_line(2, 4, other, 30.0, "3.0"),
        bench_line(2, 4, base, 30.0, "0.0"),
        "rep 2 t4 KvikIO ON: 24.00 best 25.00 steal 0.1% verified True passes [1.0]\n",
    ]
    samples, on, settings, failed = av.parse(lines)
    assert samples[("OFF", 4)][other][1].steal == 10.1 and samples[("OFF", 4)][base][2].steal is None
    out = av.verdict(samples, on, settings, failed)
    assert f"KvikIO OFF t4 | {other} | 20.00* / 33.00 | 26.50 | 0.869 | 1 of 2" in out, out
    assert f"gdio bench 4M x 4 | {other} | 29.00 / 30.00* | 29.50 | 1.017 | 1 of 2" in out, out
    assert f"KvikIO OFF t4 | {base} | 30.00 / 31.00 | 30.50 | - | -" in out, out
    # OFF ÷ ON 0.800 (stolen OFF) and 1.375; OFF ÷ bench 0.690 (both) and 1.100 (stolen bench).
    on_line = next(o for o in out if o.startswith(f"issue 9 OFF / ON with {other}: "))
    assert on_line == (
        f"issue 9 OFF / ON with {other}: t4 0.800* / 1.375; weakest 0.800* at t4 rep 1 "
        "(target 1.10: 1 of 2 below); without * 1.375"
    )
    vs_line = next(o for o in out if o.startswith(f"issue 9 OFF / bench with {other}: "))
    assert vs_line.endswith("weakest 0.690* at t4 rep 1 (target 0.95: 1 of 2 below); every sample *"), vs_line
    calm = next(o for o in out if o.startswith(f"issue 9 OFF / ON with {base}: "))
    assert "*" not in calm and "without" not in calm, calm
    assert out[-1] == "* the hypervisor took 2 % or more of the CPUs while the sample ran"
    # Nothing stolen: no mark and no footnote.
    quiet = av.verdict(*av.parse(random_phase(51, reps=2)[0]))
    assert not any("*" in o for o in quiet), quiet

