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
