"""python -m gdio: the CLI's output and exit status."""

import subprocess
import sys


def run(*args):
    return subprocess.run([sys.executable, "-m", "gdio", *args], capture_output=True, text=True, timeout=300)


def test_version_and_help():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("gdio ")
    r = run("--help")
    assert r.returncode == 0 and "bench" in r.stdout and "check" in r.stdout


def test_bad_subcommand_exit_status():
    r = run("no-such-command")
    assert r.returncode == 2 and "no-such-command" in r.stderr


def test_check_and_make_file(tmp_path):
    path = tmp_path / "m.bin"
    r = run("make-file", str(path), "--size", "64K", "--seed", "7")
    assert r.returncode == 0, r.stderr
    assert path.stat().st_size == 65536
    r = run("check", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert str(tmp_path) in r.stdout


def test_bench_json_verifies_and_says_where_the_time_went(tmp_path):
    r = run("bench", "--target", "host", "--size", "8M", "--io-size", "1M", "--queue-depth", "4",
            "--iterations", "1", "--dir", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    import json
    d = json.loads(r.stdout)
    ops = [x["op"] for x in d["results"]]
    assert ops == ["read", "write"]
    for x in d["results"]:
        assert x["verified"] is True and x["bytes"] == 8 << 20 and x["gbps"] > 0
        assert x["workers"]["threads"] >= 1
    assert list(tmp_path.iterdir()) == [], "the bench left files behind"


def test_load_and_save_a_checkpoint(tmp_path, rng):
    np = __import__("pytest").importorskip("numpy")
    st = __import__("pytest").importorskip("safetensors.numpy")
    tensors = {
        f"layer.{i}.w": np.frombuffer(rng.randbytes(4 * (i + 1) * 257), dtype=np.float32).reshape(i + 1, 257)
        for i in range(6)
    }
    src = tmp_path / "m.safetensors"
    st.save_file(tensors, str(src))
    r = run("load", str(src), "--target", "host", "--verify", "--json")
    assert r.returncode == 0, r.stderr
    import json
    d = json.loads(r.stdout)
    assert d["tensors"] == 6 and d["verified"] is True
    assert d["bytes"] == sum(t.nbytes for t in tensors.values())
    out = tmp_path / "again.safetensors"
    r = run("save", str(src), "--out", str(out), "--via", "host", "--json")
    assert r.returncode == 0, r.stderr
    back = st.load_file(str(out))
    assert sorted(back) == sorted(tensors)
    for k, v in tensors.items():
        assert back[k].tobytes() == v.tobytes()


def test_ctrl_c_ends_a_running_bench_and_leaves_no_file(tmp_path):
    """SIGINT ends ``python -m gdio bench`` as it ends the ``gdio`` executable (the command runs
    in native code, where Python's own handler would only set a flag nobody reads)."""
    import signal
    import time

    p = subprocess.Popen([sys.executable, "-m", "gdio", "bench", "--target", "host", "--size", "1G",
                          "--iterations", "1000", "--dir", str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(3)
        assert p.poll() is None, p.communicate()
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert rc in (-signal.SIGINT, 128 + signal.SIGINT), rc
    assert list(tmp_path.iterdir()) == [], "the bench left files behind"
