"""bench/cpu_steal.py, the steal reading of the bench scripts (KvikIO's rows in the `abba` and
`kvrow` phases): the aggregate line parsed, per-CPU and malformed lines refused, spans under 100
ticks giving nothing, and this machine's /proc/stat read."""

import importlib.util
import pathlib
import random

REPO = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("cpu_steal", REPO / "bench" / "cpu_steal.py")
cs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cs)


def test_the_aggregate_line_gives_steal_and_total():
    rng = random.Random(48)
    t = [rng.randrange(10**6) for _ in range(10)]
    line = "cpu  " + " ".join(map(str, t)) + "\n"
    # guest and guest_nice (the last two) are inside user and nice already.
    assert cs.parse_cpu_line(line) == (t[7], sum(t[:8]))
    assert cs.parse_cpu_line("cpu3 " + " ".join(map(str, t))) is None
    assert cs.parse_cpu_line("cpu 1 2 3") is None
    assert cs.parse_cpu_line("cpu 1 2 3 4 5 6 7 x 9 10") is None
    assert cs.parse_cpu_line("intr 1 2 3 4 5 6 7 8 9 10") is None


def test_a_span_gives_its_share_only_from_enough_ticks():
    assert cs.steal_share((10, 1000), (35, 1100)) == 0.25
    assert cs.steal_share((10, 1000), (10, 1099)) is None
    assert cs.steal_share(None, (10, 2000)) is None
    assert cs.steal_share((10, 1000), None) is None
    rng = random.Random(49)
    for _ in range(100):
        before = (rng.randrange(10**6), rng.randrange(10**7, 10**8))
        span, stolen = rng.randrange(100, 10**6), 0
        stolen = rng.randrange(span + 1)
        share = cs.steal_share(before, (before[0] + stolen, before[1] + span))
        assert share == round(stolen / span, 4) and 0 <= share <= 1


def test_this_machine_reads_and_a_missing_file_gives_none(tmp_path):
    now = cs.cpu_ticks()
    assert now is not None and 0 <= now[0] <= now[1]
    assert cs.cpu_ticks(str(tmp_path / "no-stat")) is None
    bad = tmp_path / "stat"
    bad.write_text("cpu0 1 2 3 4 5 6 7 8\n")
    assert cs.cpu_ticks(str(bad)) is None
