"""``gdio.RemoteFile`` against a local server: HTTP range reads of random files at random
offsets compared with the file's bytes (host buffers, and simulated GPU memory through
``copy_into``), S3 requests checked against AWS's published SigV4 example and verified by the
server, presigned and WebHDFS URLs (with the namenode's redirect), retries on 503, and the
errors: a server that ignores ranges, a missing file, bad sizes and offsets."""

import datetime
import hashlib
import http.server
import json
import os
import threading
import urllib.parse

import numpy as np
import pytest

import gdio
from gdio import RemoteEndpointType, RemoteFile
from gdio._remote import sigv4_headers

KEY_ID, SECRET, REGION = "AKIDGDIOTEST", "gdio/secret/key", "us-west-2"


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.files: dict[str, bytes] = {}
        self.fail_next = 0  # answer this many GETs with 503 first
        self.ignore_range = False
        self.requests: list[tuple[str, str, dict]] = []
        self.lock = threading.Lock()

    def handle_error(self, request, client_address):
        pass  # a client that hung up early (the tests provoke it) is not a server failure

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _expected_signature(method, url, headers):
    """Recomputes the request's signature from what the server received."""
    signed = headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    date = headers["x-amz-date"]
    base = {k: headers[k] for k in headers if k.lower() in signed and k.lower() not in ("host", "authorization")}
    base.pop("x-amz-date", None)
    base.pop("x-amz-content-sha256", None)
    when = datetime.datetime.strptime(date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    return sigv4_headers(method, url, base, REGION, KEY_ID, SECRET, headers.get("x-amz-security-token"), now=when)[
        "Authorization"
    ]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _file(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        srv = self.server
        with srv.lock:
            srv.requests.append((self.command, self.path, dict(self.headers)))
        path = u.path
        if path.startswith("/s3/"):  # an S3-compatible endpoint: check the signature
            h = dict(self.headers)
            if "Authorization" not in h:
                return None, (403, b"AccessDenied: no signature")
            url = f"http://{h['Host']}{self.path}"
            if _expected_signature(self.command, url, h) != h["Authorization"]:
                return None, (403, b"SignatureDoesNotMatch")
        if path.startswith("/presigned/") and q.get("X-Amz-Signature") != ["ok"]:
            return None, (403, b"bad presigned signature")
        if path.startswith("/webhdfs/v1/"):
            name = path[len("/webhdfs/v1"):]
            data = srv.files.get(name)
            if data is None:
                return None, (404, b'{"RemoteException": {"message": "File does not exist"}}')
            op = q.get("op", [""])[0]
            if op == "GETFILESTATUS":
                return None, (200, json.dumps({"FileStatus": {"length": len(data), "type": "FILE"}}).encode())
            if op == "OPEN":  # the namenode redirects to a "datanode"
                off, length = int(q["offset"][0]), int(q["length"][0])
                return None, (307, b"", [("Location", f"{srv.base}/datanode{name}?off={off}&len={length}")])
            return None, (400, b"unknown op")
        if path.startswith("/datanode/"):
            data = srv.files.get(path[len("/datanode"):])
            off, length = int(q["off"][0]), int(q["len"][0])
            return None, (200, data[off : off + length])
        for prefix in ("/s3/", "/presigned/", "/"):
            if path.startswith(prefix) and path[len(prefix) - 1 :] in srv.files:
                return srv.files[path[len(prefix) - 1 :]], None
        return None, (404, b"NoSuchKey")

    def do_HEAD(self):
        data, err = self._file()
        if err:
            return self._send(*err)
        self._send(200, data)

    def do_GET(self):
        srv = self.server
        with srv.lock:
            fail = srv.fail_next > 0
            srv.fail_next -= fail
        if fail:
            return self._send(503, b"SlowDown")
        data, err = self._file()
        if err:
            return self._send(*err)
        rng = self.headers.get("Range")
        if not rng or srv.ignore_range:
            return self._send(200, data)
        a, b = rng.removeprefix("bytes=").split("-")
        a, b = int(a), min(int(b), len(data) - 1)
        self._send(206, data[a : b + 1], [("Content-Range", f"bytes {a}-{b}/{len(data)}")])


@pytest.fixture
def server():
    s = Server()
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    yield s
    s.shutdown()
    s.server_close()


@pytest.fixture
def small_tasks():
    with gdio.defaults.set({"task_size": 64 << 10, "threads": 6}):
        yield


def test_sigv4_matches_aws_published_example():
    # docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "GET Object".
    h = sigv4_headers(
        "GET",
        "https://examplebucket.s3.amazonaws.com/test.txt",
        {"Range": "bytes=0-9"},
        "us-east-1",
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        now=datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc),
    )
    assert h["x-amz-content-sha256"] == hashlib.sha256(b"").hexdigest()
    assert h["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )


def test_http_reads_at_random_offsets_match_the_file(server, rng, small_tasks):
    data = rng.randbytes(rng.randrange(300_000, 900_000))
    server.files["/d/model.bin"] = data
    with RemoteFile.open_http(f"{server.base}/d/model.bin") as f:
        assert f.nbytes() == len(data)
        assert f.remote_endpoint_type() == RemoteEndpointType.HTTP
        whole = bytearray(len(data))
        assert f.read(whole) == len(data) and bytes(whole) == data
        for _ in range(12):
            off = rng.randrange(0, len(data))
            size = rng.randrange(0, min(200_000, len(data) - off) + 1)
            buf = np.zeros(size + 7, dtype=np.uint8)
            want = data[off : off + size]
            assert f.read(buf, size, off) == len(want)
            assert buf[: len(want)].tobytes() == want
            assert not buf[len(want) :].any(), "nothing written past the bytes read"
        futs = [f.pread(bytearray(5000), 5000, o) for o in (0, 1234, len(data) - 5000)]
        done, not_done = gdio.wait(futs)
        assert not not_done and [x.get() for x in futs] == [5000] * 3


SIM_CHILD = """
import ctypes, os, random, sys
sys.path.insert(0, os.environ["TESTS"])
import threading
import gdio
from gdio import _native
from test_remote import Server
assert gdio.runtime_info()["runtime"] == "sim", gdio.runtime_info()
rng = random.Random(int(os.environ["SEED"]))
data = rng.randbytes(400_000)
s = Server()
threading.Thread(target=s.serve_forever, daemon=True).start()
s.files["/g.bin"] = data

class Dev:
    def __init__(self, n):
        self.n, self.addr = n, _native._sim_alloc(0, n)
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (self.addr, False), "version": 3}

with gdio.defaults.set({"task_size": 64 << 10}):
    f = gdio.RemoteFile.open(f"{s.base}/g.bin")
    dev = Dev(len(data))
    ctypes.memset(dev.addr, 0x5A, len(data))
    assert f.read(dev, len(data) - 100, 100) == len(data) - 100
    got = ctypes.string_at(dev.addr, len(data))
    assert got[: len(data) - 100] == data[100:], "bytes differ"
    assert got[len(data) - 100 :] == b"\x5a" * 100, "bytes past the read were touched"
    try:
        _native.copy_into(dev, len(data) - 10, b"x" * 11)
        raise SystemExit("copy past the end was accepted")
    except ValueError as e:
        assert "do not fit" in str(e), e
print("ok")
"""


def test_reads_into_simulated_gpu_memory_go_through_copy_into(tmp_path):
    import subprocess
    import sys

    env = dict(os.environ, GDIO_SIMULATE_GPUS="1", SEED="7", TESTS=os.path.dirname(__file__))
    r = subprocess.run([sys.executable, "-c", SIM_CHILD], env=env, capture_output=True, text=True,
                       timeout=300, cwd=str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-4000:]


def test_reads_into_a_cuda_tensor(server, rng, small_tasks):
    from conftest import gpu_skip, need_torch

    torch = need_torch()
    if not torch.cuda.is_available():
        gpu_skip("no CUDA device")
    data = rng.randbytes(3_000_000)
    server.files["/t.bin"] = data
    f = RemoteFile.open(f"{server.base}/t.bin")
    t = torch.zeros(len(data), dtype=torch.uint8, device="cuda")
    assert f.read(t, len(data) - 4096, 4096) == len(data) - 4096
    assert bytes(t[: len(data) - 4096].cpu().numpy()) == data[4096:]
    assert not t[len(data) - 4096 :].any()


def test_s3_requests_are_signed_and_the_server_checks_them(server, rng, small_tasks, monkeypatch):
    data = rng.randbytes(250_000)
    server.files["/bucket/dir/w.safetensors"] = data
    for k, v in {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": REGION,
                 "AWS_ENDPOINT_URL": f"{server.base}/s3", "AWS_SESSION_TOKEN": "tok"}.items():
        monkeypatch.setenv(k, v)
    f = RemoteFile.open("s3://bucket/dir/w.safetensors")
    assert f.remote_endpoint_type() == RemoteEndpointType.S3
    assert f.url == f"{server.base}/s3/bucket/dir/w.safetensors"
    buf = bytearray(len(data))
    assert f.read(buf) == len(data) and bytes(buf) == data
    assert all(r[2].get("x-amz-security-token") == "tok" for r in server.requests)
    # Wrong secret: the server refuses, the error names the URL, the range and the status.
    g = RemoteFile.open_s3("bucket", "dir/w.safetensors", nbytes=len(data), aws_secret_access_key="wrong")
    with pytest.raises(gdio.GdioError, match=r"HTTP 403.*SignatureDoesNotMatch") as e:
        g.read(bytearray(1000), 1000, 500)
    assert "bytes 500-1499" in str(e.value)
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    with pytest.raises(RuntimeError, match="AWS_DEFAULT_REGION"):
        RemoteFile.open_s3("bucket", "dir/w.safetensors")


def test_presigned_and_webhdfs_urls(server, rng, small_tasks):
    data = rng.randbytes(200_000)
    server.files["/p.bin"] = data
    server.files["/user/x/q.bin"] = data[::-1]
    url = f"{server.base}/presigned/p.bin?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ok"
    assert gdio.infer_remote_endpoint_type(url) == RemoteEndpointType.S3_PRESIGNED_URL
    f = RemoteFile.open(url)
    buf = bytearray(150_000)
    assert f.read(buf, file_offset=30_000) == 150_000 and bytes(buf) == data[30_000:180_000]
    hdfs = f"{server.base}/webhdfs/v1/user/x/q.bin"
    assert gdio.infer_remote_endpoint_type(hdfs) == RemoteEndpointType.WEBHDFS
    h = RemoteFile.open(hdfs)
    assert h.nbytes() == len(data)
    buf = bytearray(len(data))
    assert h.read(buf) == len(data) and bytes(buf) == data[::-1]


def test_endpoint_inference_and_allow_list(monkeypatch):
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(k, raising=False)
    infer = gdio.infer_remote_endpoint_type
    assert infer("https://b.s3.us-east-1.amazonaws.com/k") == RemoteEndpointType.S3_PUBLIC
    assert infer("s3://b/k") == RemoteEndpointType.S3_PUBLIC
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "a")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "b")
    assert infer("https://b.s3.us-east-1.amazonaws.com/k") == RemoteEndpointType.S3
    assert infer("s3://b/k") == RemoteEndpointType.S3
    assert infer("https://example.com/a.bin") == RemoteEndpointType.HTTP
    with pytest.raises(RuntimeError, match="Unsupported endpoint URL 'ftp://example.com/a.bin': scheme 'ftp'"):
        infer("ftp://example.com/a.bin")
    with pytest.raises(RuntimeError, match="Bad scheme: 'example.com/a.bin' has none"):
        infer("example.com/a.bin")
    with pytest.raises(RuntimeError, match="not in allow_list"):
        RemoteFile.open("https://example.com/a.bin", RemoteEndpointType.WEBHDFS, [RemoteEndpointType.HTTP], nbytes=1)
    with pytest.raises(RuntimeError, match="no endpoint type"):
        RemoteFile.open("https://example.com/a.bin", allow_list=[RemoteEndpointType.WEBHDFS], nbytes=1)
    assert gdio.is_remote_file_available()


def test_retries_then_errors(server, rng, small_tasks):
    data = rng.randbytes(100_000)
    server.files["/r.bin"] = data
    f = RemoteFile.open_http(f"{server.base}/r.bin", nbytes=len(data))
    server.fail_next = 2  # within the default 3 attempts
    buf = bytearray(len(data))
    assert f.read(buf) == len(data) and bytes(buf) == data
    with gdio.defaults.set("http_max_attempts", 1):
        g = RemoteFile.open_http(f"{server.base}/r.bin", nbytes=len(data))
        server.fail_next = 1
        with pytest.raises(gdio.GdioError, match="HTTP 503"):
            g.read(bytearray(10), 10, 0)
    # Only the statuses of http_status_codes are retried.
    with gdio.defaults.set("http_status_codes", [429]):
        assert gdio.defaults.get("http_status_codes") == [429]
        g = RemoteFile.open_http(f"{server.base}/r.bin", nbytes=len(data))
        server.fail_next = 1
        with pytest.raises(RuntimeError, match="HTTP 503"):
            g.read(bytearray(10), 10, 0)
    # A server that ignores ranges cannot serve a part of the file: an error, buffer intact.
    server.fail_next = 0
    server.ignore_range = True
    buf = bytearray(b"\x5a" * 1000)
    with pytest.raises(gdio.GdioError, match="does not support file ranges"):
        f.read(buf, 1000, 10)
    assert bytes(buf) == b"\x5a" * 1000
    server.ignore_range = False
    with pytest.raises(gdio.GdioError, match="404"):
        RemoteFile.open_http(f"{server.base}/missing.bin")
    with pytest.raises(ValueError):
        f.read(bytearray(10), 11)
    with pytest.raises(ValueError, match="cannot read"):
        f.read(bytearray(10), 10, len(data) + 1)
    with pytest.raises(ValueError, match=f"cannot read {len(data) - 5}\\+10 bytes into a {len(data)} bytes file"):
        f.read(bytearray(10), 10, len(data) - 5)
    assert f.read(bytearray(10), 0, len(data)) == 0
    f.close()
    with pytest.raises(ValueError, match="closed"):
        f.read(bytearray(1))


def test_public_s3_objects_need_no_credentials(server, rng, small_tasks, monkeypatch):
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.base)
    data = rng.randbytes(150_000)
    server.files["/open-data/x/y.bin"] = data
    f = RemoteFile.open("s3://open-data/x/y.bin")
    assert f.remote_endpoint_type() == RemoteEndpointType.S3_PUBLIC
    assert f.url == f"{server.base}/open-data/x/y.bin"
    buf = bytearray(len(data) - 1000)
    assert f.read(buf, file_offset=1000) == len(buf) and bytes(buf) == data[1000:]
    assert not any("Authorization" in r[2] for r in server.requests)
