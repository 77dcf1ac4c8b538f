"""The hypervisor's steal from /proc/stat for the bench scripts: the share of all CPUs' time
that went to other work on the host while a span ran (as `gdio::cpu_steal` reads it for `gdio
bench` rows and the library's summary). A span under 100 ticks (a second of one CPU) gives
nothing: too short to say.
"""

MIN_TICKS = 100


def parse_cpu_line(line):
    """(steal, total) ticks from /proc/stat's aggregate `cpu` line, or None when it is not one."""
    fields = line.split()
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    try:
        # user nice system idle iowait irq softirq steal (guest time is inside user and nice).
        ticks = [int(x) for x in fields[1:9]]
    except ValueError:
        return None
    return ticks[7], sum(ticks)


def cpu_ticks(path="/proc/stat"):
    """(steal, total) ticks of all CPUs now, or None where /proc/stat cannot be read."""
    try:
        with open(path) as f:
            return parse_cpu_line(f.readline())
    except OSError:
        return None


def steal_share(before, after):
    """The hypervisor's share of the CPU time between two readings (0 to 1), or None when
    either is missing or fewer than MIN_TICKS ticks passed."""
    if before is None or after is None or after[1] - before[1] < MIN_TICKS:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 4)
