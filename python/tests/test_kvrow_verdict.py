"""bench/kvrow_verdict.py, which reports issue 9's weakest rows from `kvrow` output: rows parsed
as the phase prints them (with and without the paired `gdio bench`), failed rows counted, the
ratio of the medians over the reps, and the weakest sample named against its target."""

import importlib.util
import pathlib
import random
import statistics

REPO = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("kvrow_verdict", REPO / "bench" / "kvrow_verdict.py")
kv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kv)


def line(rep, t, on, off, bench=None):
    ratio = "failed" if on is None or off is None else round(off / on, 3)
    on_text = "failed" if on is None else on
    off_text = "failed" if off is None else off
    text = f"rep {rep} t{t} KvikIO ON {on_text} | OFF on gdio {off_text} | ratio {ratio}"
    if bench is not None:
        vs = "failed" if off is None else round(off / bench, 3)
        text += f" | gdio bench 4M x {t} {bench} | OFF / bench {vs}"
    return text + "\n"


def test_random_rows_give_their_ranges_and_the_weakest_sample():
    rng = random.Random(43)
    lines, ratios, vs = ["rep 1 pinned 1 GiB copies: 55.1 GB/s\n"], [], []
    for rep in (1, 2, 3):
        for t in (1, 2, 4, 8, 16, 32):
            on = round(rng.uniform(5, 48), 2)
            off = round(on * rng.uniform(1.0, 2.5), 2)
            bench = round(off / rng.uniform(0.9, 1.1), 2)
            lines.append(line(rep, t, on, off, bench))
            ratios.append((round(off / on, 3), t))
            vs.append((round(off / bench, 3), t))
    rows = kv.parse(lines)
    assert sorted(rows) == [1, 2, 4, 8, 16, 32]
    assert all(len(r["OFF / ON"]) == 3 and len(r["OFF / bench"]) == 3 for r in rows.values())
    out = kv.verdict(rows)
    # Each thread count's ratio of the medians: from the GB/s of the lines, not the ratios.
    meds = {}
    for t in rows:
        side = lambda k: statistics.median(float(l.split(k)[1].split()[0]) for l in lines[1:] if f" t{t} " in l)
        meds[t] = (round(side("OFF on gdio ") / side("KvikIO ON "), 3), round(side("OFF on gdio ") / side("gdio bench 4M x %d " % t), 3))
        assert f" | {meds[t][0]:.3f} | {meds[t][1]:.3f} | 0" in next(o for o in out if o.startswith(f"{t} | 3 | "))
    (m_on, t_on), (m_vs, t_vs) = min((m[0], t) for t, m in meds.items()), min((m[1], t) for t, m in meds.items())
    assert out[-3] == (
        f"weakest ratio of the medians over the reps: OFF / ON {m_on:.3f} at {t_on} threads (target 1.10), "
        f"OFF / bench {m_vs:.3f} at {t_vs} threads (target 0.95)"
    )
    low, t = min(ratios)
    below = sum(1 for v, _ in ratios if v < 1.10)
    state = "holds" if below == 0 else f"{below} of 18 below"
    assert out[-2] == f"weakest OFF / ON: {low:.3f} at {t} threads (target 1.10: {state})"
    low, t = min(vs)
    below = sum(1 for v, _ in vs if v < 0.95)
    state = "holds" if below == 0 else f"{below} of 18 below"
    assert out[-1] == f"weakest OFF / bench: {low:.3f} at {t} threads (target 0.95: {state})"


def test_rows_without_bench_and_failed_rows_are_said():
    lines = [line(1, 16, 46.0, 51.5), line(2, 16, None, 50.0), line(1, 8, 42.0, 47.0)]
    # KvikIO ON failed but the OFF row and its bench did not: one ratio of two missing.
    lines.append(line(1, 4, None, 30.0, 29.0))
    lines.append(line(2, 4, 25.0, 30.0, 29.5))
    rows = kv.parse(lines)
    assert rows[16]["failed"] == 1 and rows[16]["OFF / ON"] == [round(51.5 / 46.0, 3)]
    assert rows[4]["reps"] == 2 and rows[4]["failed"] == 1 and len(rows[4]["OFF / bench"]) == 2
    out = kv.verdict(rows)
    # 16 threads: OFF 51.5 and 50.0, ON only 46.0; no bench.
    assert f"16 | 2 | 1.120–1.120 | - | {50.75 / 46.0:.3f} | - | 1" in out
    # 4 threads: OFF 30.0 both, ON only 25.0, bench 29.0 and 29.5.
    assert f"4 | 2 | 1.200–1.200 | 1.017–1.034 | 1.200 | {30.0 / 29.25:.3f} | 1" in out
    assert out[-2] == "weakest OFF / bench: 1.017 at 4 threads (target 0.95: holds)"
    assert out[-1].startswith("some rows failed")
    assert out[-3] == "weakest OFF / ON: 1.119 at 8 threads (target 1.10: holds)"
    assert out[-4] == (
        f"weakest ratio of the medians over the reps: OFF / ON {50.75 / 46.0:.3f} at 16 threads (target 1.10), "
        f"OFF / bench {30.0 / 29.25:.3f} at 4 threads (target 0.95)"
    )


def test_no_rows_is_an_error(tmp_path, capsys):
    p = tmp_path / "kvrow.txt"
    p.write_text("rep 1 pinned 1 GiB copies: 55.1 GB/s\n")
    assert kv.main([str(p)]) == 1
    assert "no kvrow rows" in capsys.readouterr().err


def test_rows_with_the_bench_rows_steal_parse_alike():
    # Since session 47 each paired row ends with the hypervisor's steal during the bench row,
    # since session 48 also during KvikIO's passes, ON and OFF.
    first = line(1, 8, 40.0, 46.0, 45.0).rstrip("\n") + " | steal 2.1 % | KvikIO steal ON 0.0 % OFF 10.1 %\n"
    second = line(2, 8, 41.0, 45.5, 46.0).rstrip("\n") + " | steal - % | KvikIO steal ON - % OFF - %\n"
    rows = kv.parse([first, second])
    assert rows[8]["reps"] == 2 and rows[8]["failed"] == 0
    assert rows[8]["bench"] == [45.0, 46.0] and rows[8]["OFF"] == [46.0, 45.5]
    assert rows[8]["OFF / bench"] == [round(46.0 / 45.0, 3), round(45.5 / 46.0, 3)]



def test_the_weakest_without_samples_run_while_the_cpus_were_stolen_follows():
    tail = lambda b, on, off: f" | steal {b} % | KvikIO steal ON {on} % OFF {off} %\n"
    lines = [
        # Stolen OFF side (10.1 %): the weakest of both ratios, 0.800 and 0.842.
        line(1, 8, 40.0, 32.0, 38.0).rstrip("\n") + tail("0.3", "0.0", "10.1"),
        line(2, 8, 40.0, 46.0, 45.0).rstrip("\n") + tail("0.1", "0.2", "0.4"),
        # Stolen bench (2.0 %, the threshold itself): both its ratios count as stolen.
        line(1, 16, 44.0, 50.0, 52.0).rstrip("\n") + tail("2.0", "-", "-"),
        line(2, 16, 45.0, 48.5, 51.0).rstrip("\n") + tail("1.9", "0.0", "0.0"),
    ]
    out = kv.verdict(kv.parse(lines))
    assert "weakest OFF / ON: 0.800 at 8 threads (target 1.10: 2 of 4 below)" in out, out
    assert out[-2] == (
        "weakest OFF / ON without the 2 of 4 samples run with 2 % or more of the CPUs stolen: "
        f"{48.5 / 45.0:.3f} at 16 threads (target 1.10: 1 of 2 below)"
    )
    assert out[-1] == (
        "weakest OFF / bench without the 2 of 4 samples run with 2 % or more of the CPUs stolen: "
        f"{48.5 / 51.0:.3f} at 16 threads (target 0.95: holds)"
    )
    # Every sample stolen: said, with nothing left to name.
    every = kv.verdict(kv.parse([lines[0]]))
    assert every[-2].endswith("of the CPUs stolen: none left") and every[-1].endswith("none left"), every
