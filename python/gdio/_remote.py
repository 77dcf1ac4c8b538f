"""KvikIO's ``kvikio.RemoteFile``: reads of files behind HTTP(S), S3 (signed with AWS
credentials, public, or a presigned URL) and WebHDFS into host or GPU buffers.

A read is cut into ``task_size`` pieces (gdio's configuration) fetched by up to ``threads``
connections at once with HTTP range requests; each piece lands in the destination directly
(host memory) or through a host buffer and one copy (GPU memory, ``_native.copy_into``). A
failed request is tried ``http_max_attempts`` times in all, with backoff, when the server
answers a status of ``http_status_codes`` or the connection drops. Errors are ``GdioError`` naming the
URL, the byte range and the server's status. ``http_status_codes`` lists the answers retried
(429, 500, 502, 503, 504).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import enum
import hashlib
import hmac
import http.client
import json
import os
import threading
import time
import urllib.parse
from typing import Any, Callable, Optional

from . import _native
from ._errors import GdioError

__all__ = [
    "RemoteEndpointType",
    "RemoteFile",
    "infer_remote_endpoint_type",
    "is_remote_file_available",
]

_MAX_REDIRECTS = 5


class RemoteEndpointType(enum.Enum):
    """The kinds of remote endpoint (KvikIO's numbering)."""

    AUTO = 0
    S3 = 1
    S3_PUBLIC = 2
    S3_PRESIGNED_URL = 3
    WEBHDFS = 4
    HTTP = 5


def is_remote_file_available() -> bool:
    """True: gdio reads remote files with Python's own HTTP client (no libcurl needed)."""
    return True


def _error(message: str, errno: int = 5) -> GdioError:
    return GdioError(errno, message)


# ---------------------------------------------------------------------------- endpoints


def _is_s3_host(host: str) -> bool:
    return host.endswith(".amazonaws.com") and (".s3." in f".{host}" or host.startswith("s3."))


def _looks_presigned(query: dict[str, list[str]]) -> bool:
    return "X-Amz-Signature" in query or "X-Amz-Algorithm" in query or "Signature" in query


def _has_credentials() -> bool:
    return bool(os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"))


def _matches(kind: RemoteEndpointType, url: str) -> bool:
    """Whether ``url`` has the form of endpoint ``kind`` (KvikIO's AUTO rules)."""
    u = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qs(u.query)
    s3_form = u.scheme == "s3" or (u.scheme in ("http", "https") and _is_s3_host(u.hostname or ""))
    if kind == RemoteEndpointType.S3_PRESIGNED_URL:
        return u.scheme in ("http", "https") and _looks_presigned(q)
    if kind == RemoteEndpointType.S3:
        return s3_form and not _looks_presigned(q) and _has_credentials()
    if kind == RemoteEndpointType.S3_PUBLIC:
        return s3_form and not _looks_presigned(q)
    if kind == RemoteEndpointType.WEBHDFS:
        return u.scheme in ("http", "https") and "/webhdfs/v1/" in u.path
    if kind == RemoteEndpointType.HTTP:
        return u.scheme in ("http", "https") and bool(u.hostname)
    return False


_AUTO_ORDER = (
    RemoteEndpointType.S3,
    RemoteEndpointType.S3_PUBLIC,
    RemoteEndpointType.S3_PRESIGNED_URL,
    RemoteEndpointType.WEBHDFS,
    RemoteEndpointType.HTTP,
)


def infer_remote_endpoint_type(url: str) -> RemoteEndpointType:
    """The endpoint type ``RemoteFile.open`` would pick for ``url`` (``RuntimeError`` when no
    type fits): a presigned S3 URL (``X-Amz-Signature`` in its query); ``s3://`` or an
    ``*.amazonaws.com`` S3 URL, signed (``S3``) when ``AWS_ACCESS_KEY_ID`` and
    ``AWS_SECRET_ACCESS_KEY`` are set, else public (``S3_PUBLIC``); a path with
    ``/webhdfs/v1/``; any other ``http(s)://`` URL."""
    for kind in (RemoteEndpointType.S3_PRESIGNED_URL,) + _AUTO_ORDER:
        if _matches(kind, url):
            return kind
    scheme = urllib.parse.urlsplit(url).scheme
    if not scheme:
        raise RuntimeError(f"Bad scheme: {url!r} has none (gdio reads http://, https:// and s3:// URLs)")
    raise RuntimeError(
        f"Unsupported endpoint URL {url!r}: scheme {scheme!r} (gdio reads http://, https:// and s3:// URLs)"
    )


class _Endpoint:
    """Where a remote file's bytes come from and how to ask: ``url`` (what ``RemoteFile.url``
    says), ``target()`` (the URL to request) and ``headers(method, url, extra)``."""

    kind = RemoteEndpointType.HTTP

    def __init__(self, url: str) -> None:
        self.url = url

    def target(self, offset: int, length: int) -> tuple[str, dict[str, str]]:
        """URL and headers for ``length`` bytes at ``offset``."""
        return self.url, {"Range": f"bytes={offset}-{offset + length - 1}"}

    def size(self, session: "_Session") -> int:
        """The file's size: a ``HEAD`` (``Content-Length``), else a one-byte range request
        (``Content-Range``)."""
        url, headers = self.url, {}
        status, hdrs, _ = session.request("HEAD", url, self.sign("HEAD", url, headers))
        if status == 200 and hdrs.get("content-length", "").isdigit():
            return int(hdrs["content-length"])
        return self._size_by_range(session, f"HTTP {status} to HEAD and")

    def _size_by_range(self, session: "_Session", before: str = "") -> int:
        """The size from the answer to a request for the first byte (``Content-Range``)."""
        url, headers = self.target(0, 1)
        status, hdrs, _ = session.request("GET", url, self.sign("GET", url, headers), body=True)
        total = hdrs.get("content-range", "").rpartition("/")[2]
        if status == 206 and total.isdigit():
            return int(total)
        if status == 200 and hdrs.get("content-length", "").isdigit():
            return int(hdrs["content-length"])
        said = f"{before} " if before else ""
        raise _error(f"cannot learn the size of {self.url}: {said}HTTP {status} to a range request")

    def sign(self, method: str, url: str, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` with whatever authenticates the request."""
        return headers


class _WebHdfs(_Endpoint):
    kind = RemoteEndpointType.WEBHDFS

    def _with(self, **params: Any) -> str:
        u = urllib.parse.urlsplit(self.url)
        q = [(k, v) for k, v in urllib.parse.parse_qsl(u.query) if k.lower() not in ("op", "offset", "length")]
        q += [(k, str(v)) for k, v in params.items()]
        return urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q)))

    def target(self, offset: int, length: int) -> tuple[str, dict[str, str]]:
        return self._with(op="OPEN", offset=offset, length=length), {}

    def size(self, session: "_Session") -> int:
        url = self._with(op="GETFILESTATUS")
        status, _, body = session.request("GET", url, {}, body=True)
        try:
            return int(json.loads(body)["FileStatus"]["length"])
        except (ValueError, KeyError, TypeError):
            raise _error(f"cannot learn the size of {self.url}: WebHDFS GETFILESTATUS answered HTTP {status}") from None


def _s3_url(bucket: str, key: str, region: str, endpoint: Optional[str]) -> str:
    key = urllib.parse.quote(key.lstrip("/"), safe="/~")
    if endpoint:
        return f"{endpoint.rstrip('/')}/{bucket}/{key}"
    return f"https://{bucket}.s3.{region}.amazonaws.com/{key}"


def _s3_parts(url: str) -> tuple[str, str]:
    """``(bucket, key)`` of an ``s3://bucket/key`` URL."""
    u = urllib.parse.urlsplit(url)
    if u.scheme != "s3" or not u.netloc or not u.path.strip("/"):
        raise RuntimeError(f"{url!r} is not an S3 URL of the form s3://<bucket>/<object>")
    return u.netloc, urllib.parse.unquote(u.path.lstrip("/"))


class _S3(_Endpoint):
    """An S3 object, requests signed with AWS Signature Version 4."""

    kind = RemoteEndpointType.S3

    def __init__(self, url: str, region: str, key_id: str, secret: str, token: Optional[str]) -> None:
        super().__init__(url)
        self.region, self.key_id, self.secret, self.token = region, key_id, secret, token

    def sign(self, method: str, url: str, headers: dict[str, str]) -> dict[str, str]:
        return sigv4_headers(method, url, headers, self.region, self.key_id, self.secret, self.token)


class _S3Public(_Endpoint):
    kind = RemoteEndpointType.S3_PUBLIC


class _S3Presigned(_Endpoint):
    kind = RemoteEndpointType.S3_PRESIGNED_URL

    def size(self, session: "_Session") -> int:
        # A presigned URL signs one method (GET): ask for one byte, read the total.
        return self._size_by_range(session)


def sigv4_headers(
    method: str,
    url: str,
    headers: dict[str, str],
    region: str,
    key_id: str,
    secret: str,
    token: Optional[str] = None,
    now: Optional[datetime.datetime] = None,
) -> dict[str, str]:
    """``headers`` plus ``Authorization``, ``x-amz-date``, ``x-amz-content-sha256`` (and
    ``x-amz-security-token``) for an S3 request with an empty body, signed with AWS Signature
    Version 4 (S3's rules: the path is signed as sent, not normalized)."""
    u = urllib.parse.urlsplit(url)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload = hashlib.sha256(b"").hexdigest()
    out = dict(headers)
    out["x-amz-date"] = amz_date
    out["x-amz-content-sha256"] = payload
    if token:
        out["x-amz-security-token"] = token
    host = u.netloc
    if (u.scheme == "https" and host.endswith(":443")) or (u.scheme == "http" and host.endswith(":80")):
        host = host.rpartition(":")[0]
    signed = {k.lower(): " ".join(str(v).split()) for k, v in out.items()}
    signed["host"] = host
    names = sorted(signed)
    canonical_headers = "".join(f"{k}:{signed[k]}\n" for k in names)
    signed_headers = ";".join(names)
    path = u.path or "/"
    query = sorted(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
    canonical_query = "&".join(
        f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}" for k, v in query
    )
    canonical = "\n".join([method, path, canonical_query, canonical_headers, signed_headers, payload])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret}".encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={key_id}/{scope}, SignedHeaders={signed_headers}, Signature={signature}"
    )
    return out


# ---------------------------------------------------------------------------- transport


class _Session:
    """One keep-alive connection per thread and host, redirects followed, retries with
    backoff on the statuses of ``retry`` and dropped connections."""

    def __init__(self, attempts: int, timeout: float, retry: tuple[int, ...]) -> None:
        self.attempts, self.timeout, self.retry = max(1, attempts), timeout, retry
        self._local = threading.local()

    def _connection(self, scheme: str, netloc: str) -> http.client.HTTPConnection:
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        c = conns.get((scheme, netloc))
        if c is None:
            cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
            c = conns[(scheme, netloc)] = cls(netloc, timeout=self.timeout)
        return c

    def _drop(self, scheme: str, netloc: str) -> None:
        c = getattr(self._local, "conns", {}).pop((scheme, netloc), None)
        if c is not None:
            c.close()

    @staticmethod
    def _receive(
        method: str,
        url: str,
        resp: http.client.HTTPResponse,
        got: dict[str, str],
        sent: dict[str, str],
        into: memoryview,
    ) -> None:
        """Reads the body into ``into``, which it must fill exactly; an answer of another size
        is an error before a byte of ``into`` is written."""
        want = len(into)
        length = got.get("content-length", "")
        if length.isdigit() and int(length) == want:
            n = 0
            while n < want:
                k = resp.readinto(into[n:])
                if not k:
                    raise _error(f"{method} {url}: the connection closed after {n} of {want} bytes")
                n += k
            return
        if not length.isdigit():  # chunked: read it all first, then check
            data = resp.read()
            if len(data) == want:
                into[:] = data
                return
            length = str(len(data))
        else:
            resp.close()
        if resp.status == 200 and any(k.lower() == "range" for k in sent):
            raise _error(
                f"{method} {url}: the server ignored the range request (HTTP 200, {length} bytes where {want} were "
                "asked for): it does not support file ranges, so parts of the file cannot be read"
            )
        raise _error(
            f"{method} {url}: the server sent {length} bytes where {want} were asked for "
            f"(HTTP {resp.status}, {got.get('content-range') or 'no Content-Range'})"
        )

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bool = False,
        into: Optional[memoryview] = None,
        resign: Optional[Callable[[str], dict[str, str]]] = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """``(status, headers, body)`` of the final answer; with ``into``, a 2xx body is read
        into it (``body`` stays empty) and must fill it exactly."""
        delay = 0.05
        for attempt in range(1, self.attempts + 1):
            target, hdrs = url, headers
            try:
                for _ in range(_MAX_REDIRECTS + 1):
                    u = urllib.parse.urlsplit(target)
                    conn = self._connection(u.scheme, u.netloc)
                    path = urllib.parse.urlunsplit(("", "", u.path or "/", u.query, ""))
                    conn.request(method, path, headers=hdrs)
                    resp = conn.getresponse()
                    got = {k.lower(): v for k, v in resp.getheaders()}
                    if resp.status in (301, 302, 303, 307, 308) and "location" in got:
                        resp.read()
                        target = urllib.parse.urljoin(target, got["location"])
                        # A redirect to another place (WebHDFS's datanode) keeps the range.
                        hdrs = {k: v for k, v in headers.items() if k.lower() == "range"}
                        if resign is not None:
                            hdrs = resign(target)
                        continue
                    break
                else:
                    raise _error(f"{method} {url}: more than {_MAX_REDIRECTS} redirects")
                if resp.status in self.retry and attempt < self.attempts:
                    resp.read()
                    time.sleep(delay)
                    delay *= 2
                    continue
                if into is not None and 200 <= resp.status < 300:
                    try:
                        self._receive(method, url, resp, got, hdrs, into)
                    except GdioError:
                        self._drop(u.scheme, u.netloc)  # the body was not read to its end
                        raise
                    return resp.status, got, b""
                data = resp.read() if body or resp.status >= 300 else b""
                if method != "HEAD" and not body and resp.status < 300:
                    resp.read()
                return resp.status, got, data
            except (OSError, http.client.HTTPException) as e:
                if isinstance(e, GdioError):
                    raise
                self._drop(urllib.parse.urlsplit(target).scheme, urllib.parse.urlsplit(target).netloc)
                if attempt == self.attempts:
                    raise _error(f"{method} {url}: {e} (after {attempt} attempts)", getattr(e, "errno", None) or 5) from e
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")


# ---------------------------------------------------------------------------- the file


class RemoteFuture:
    """The result of :meth:`RemoteFile.pread`: ``get(timeout=None)`` (bytes read),
    ``done()``, ``add_done_callback(fn)`` (``fn(future)``), ``await``; works with
    :func:`gdio.wait`."""

    def __init__(self, inner: "concurrent.futures.Future[int]") -> None:
        self._inner = inner

    def get(self, timeout: Optional[float] = None) -> int:
        """Waits and returns the bytes read (re-raises the read's error)."""
        try:
            return self._inner.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"the remote read did not finish within {timeout} s") from None

    def done(self) -> bool:
        """Whether the read finished (or failed)."""
        return self._inner.done()

    def add_done_callback(self, fn: Callable[["RemoteFuture"], Any]) -> None:
        """Calls ``fn(self)`` when the read finishes (at once if it has)."""
        self._inner.add_done_callback(lambda _f: fn(self))

    def __await__(self):
        from ._aio import await_future

        return await_future(self)


_POOL: Optional[concurrent.futures.ThreadPoolExecutor] = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _POOL, _POOL_SIZE
    n = max(1, int(_native.config_get("threads")))
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE != n:
            old, _POOL, _POOL_SIZE = _POOL, concurrent.futures.ThreadPoolExecutor(n, "gdio-remote"), n
            if old is not None:
                old.shutdown(wait=False)
        return _POOL


def _host_view(buf: Any) -> Optional[memoryview]:
    """A writable byte view of ``buf`` when it is host memory behind the buffer protocol and
    has no device interface; ``None`` otherwise (then the bytes go through ``copy_into``)."""
    if hasattr(buf, "__cuda_array_interface__"):
        return None
    dev = getattr(buf, "__dlpack_device__", None)
    if dev is not None:
        try:
            if dev()[0] != 1:  # kDLCPU
                return None
        except Exception:  # noqa: BLE001 - no answer: try the buffer protocol
            pass
    try:
        mv = memoryview(buf)
    except TypeError:
        return None
    if mv.readonly or not mv.c_contiguous:
        return None
    return mv.cast("B")


def _nbytes(buf: Any) -> int:
    mv = _host_view(buf)
    if mv is not None:
        return mv.nbytes
    if hasattr(buf, "nbytes"):
        return int(buf.nbytes)
    if hasattr(buf, "__cuda_array_interface__"):
        cai = buf.__cuda_array_interface__
        n = 1
        for d in cai["shape"]:
            n *= int(d)
        import numpy

        return n * numpy.dtype(cai["typestr"]).itemsize
    raise TypeError(f"gdio cannot tell the size of a {type(buf).__name__}: give size=")


class RemoteFile:
    """A file behind a URL, read into host or GPU buffers (KvikIO's ``RemoteFile``). Open
    with :meth:`open` (any kind, inferred from the URL) or the ``open_*`` class methods."""

    def __init__(self, endpoint: _Endpoint, nbytes: Optional[int]) -> None:
        self._endpoint = endpoint
        self._session = _Session(
            int(_native.config_get("http_max_attempts")),
            float(_native.config_get("http_timeout")),
            tuple(_native.config_get("http_status_codes")),
        )
        if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0):
            raise ValueError(f"nbytes must be a size in bytes (>= 0), not {nbytes!r}")
        self._nbytes = endpoint.size(self._session) if nbytes is None else nbytes
        self._closed = False

    # -- opening

    @classmethod
    def open_http(cls, url: str, nbytes: Optional[int] = None) -> "RemoteFile":
        """A file on an HTTP(S) server that answers range requests."""
        return cls(_Endpoint(url), nbytes)

    @classmethod
    def open_s3(
        cls,
        bucket_name: str,
        object_name: str,
        nbytes: Optional[int] = None,
        aws_region_name: Optional[str] = None,
        aws_access_key_id: Optional[str] = None,
        aws_secret_access_key: Optional[str] = None,
        aws_endpoint_url: Optional[str] = None,
        aws_session_token: Optional[str] = None,
    ) -> "RemoteFile":
        """An S3 object, requests signed with the given credentials or ``AWS_DEFAULT_REGION``,
        ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``;
        ``AWS_ENDPOINT_URL`` (or ``aws_endpoint_url``) for S3-compatible stores, addressed as
        ``<endpoint>/<bucket>/<object>``."""
        env = os.environ.get
        region = aws_region_name or env("AWS_DEFAULT_REGION") or env("AWS_REGION")
        key_id = aws_access_key_id or env("AWS_ACCESS_KEY_ID")
        secret = aws_secret_access_key or env("AWS_SECRET_ACCESS_KEY")
        missing = [n for n, v in (("AWS_DEFAULT_REGION", region), ("AWS_ACCESS_KEY_ID", key_id),
                                  ("AWS_SECRET_ACCESS_KEY", secret)) if not v]
        if missing:
            raise RuntimeError(f"S3 needs {', '.join(missing)} (or the matching arguments) to sign its requests")
        endpoint = aws_endpoint_url or env("AWS_ENDPOINT_URL")
        url = _s3_url(bucket_name, object_name, region, endpoint)
        token = aws_session_token or env("AWS_SESSION_TOKEN")
        return cls(_S3(url, region, key_id, secret, token), nbytes)

    @classmethod
    def open_s3_url(cls, url: str, nbytes: Optional[int] = None, **aws: Any) -> "RemoteFile":
        """An S3 object by URL: ``s3://<bucket>/<object>`` or ``https://...`` (signed as
        :meth:`open_s3`; ``aws_*`` keywords as there)."""
        if url.startswith("s3://"):
            bucket, key = _s3_parts(url)
            return cls.open_s3(bucket, key, nbytes, **aws)
        env = os.environ.get
        region = aws.get("aws_region_name") or env("AWS_DEFAULT_REGION") or env("AWS_REGION")
        key_id = aws.get("aws_access_key_id") or env("AWS_ACCESS_KEY_ID")
        secret = aws.get("aws_secret_access_key") or env("AWS_SECRET_ACCESS_KEY")
        if not (region and key_id and secret):
            raise RuntimeError("S3 needs AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to sign its requests")
        token = aws.get("aws_session_token") or env("AWS_SESSION_TOKEN")
        return cls(_S3(url, region, key_id, secret, token), nbytes)

    @classmethod
    def open_s3_public(cls, url: str, nbytes: Optional[int] = None) -> "RemoteFile":
        """A publicly readable S3 object (no signature): ``s3://<bucket>/<object>`` (region
        from ``AWS_DEFAULT_REGION``, else us-east-1) or its ``https://`` URL."""
        if url.startswith("s3://"):
            bucket, key = _s3_parts(url)
            region = os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
            url = _s3_url(bucket, key, region, os.environ.get("AWS_ENDPOINT_URL"))
        return cls(_S3Public(url), nbytes)

    @classmethod
    def open_s3_presigned_url(cls, presigned_url: str, nbytes: Optional[int] = None) -> "RemoteFile":
        """An S3 object by presigned URL (the signature is in the URL)."""
        return cls(_S3Presigned(presigned_url), nbytes)

    @classmethod
    def open_webhdfs(cls, url: str, nbytes: Optional[int] = None) -> "RemoteFile":
        """A file in HDFS through WebHDFS (``http://<namenode>:<port>/webhdfs/v1/<path>``)."""
        if "/webhdfs/v1/" not in urllib.parse.urlsplit(url).path:
            raise RuntimeError(f"{url!r} is not a WebHDFS URL (its path has no /webhdfs/v1/)")
        return cls(_WebHdfs(url), nbytes)

    @classmethod
    def open(
        cls,
        url: str,
        remote_endpoint_type: RemoteEndpointType = RemoteEndpointType.AUTO,
        allow_list: Optional[list] = None,
        nbytes: Optional[int] = None,
    ) -> "RemoteFile":
        """A remote file of the kind ``remote_endpoint_type`` (``AUTO``: inferred from the URL,
        trying the kinds of ``allow_list`` in order, default S3, S3_PUBLIC, S3_PRESIGNED_URL,
        WEBHDFS, HTTP); an explicit kind must be in ``allow_list`` when one is given."""
        order = list(allow_list) if allow_list is not None else list(_AUTO_ORDER)
        if remote_endpoint_type == RemoteEndpointType.AUTO:
            if RemoteEndpointType.S3_PRESIGNED_URL in order and _matches(RemoteEndpointType.S3_PRESIGNED_URL, url):
                kind = RemoteEndpointType.S3_PRESIGNED_URL
            else:
                kind = next((k for k in order if _matches(k, url)), None)
            if kind is None:
                raise RuntimeError(
                    f"no endpoint type of {[k.name for k in order]} matches {url!r}"
                )
        else:
            kind = remote_endpoint_type
            if allow_list is not None and kind not in order:
                raise RuntimeError(f"{kind.name} is not in allow_list {[k.name for k in order]}")
        opener = {
            RemoteEndpointType.S3: cls.open_s3_url,
            RemoteEndpointType.S3_PUBLIC: cls.open_s3_public,
            RemoteEndpointType.S3_PRESIGNED_URL: cls.open_s3_presigned_url,
            RemoteEndpointType.WEBHDFS: cls.open_webhdfs,
            RemoteEndpointType.HTTP: cls.open_http,
        }[kind]
        return opener(url, nbytes=nbytes)

    # -- facts

    @property
    def url(self) -> str:
        """The URL the file was opened with (an S3 object's https URL)."""
        return self._endpoint.url

    def remote_endpoint_type(self) -> RemoteEndpointType:
        """The kind of endpoint."""
        return self._endpoint.kind

    def nbytes(self) -> int:
        """The file's size in bytes."""
        return self._nbytes

    def close(self) -> None:
        """Marks the file closed (reads then raise)."""
        self._closed = True

    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> "RemoteFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __str__(self) -> str:
        return f"RemoteFile({self._endpoint.kind.name}, {self.url}, {self._nbytes} bytes)"

    __repr__ = __str__

    # -- reading

    def read(self, buf: Any, size: Optional[int] = None, file_offset: int = 0) -> int:
        """Reads ``size`` bytes (default: the buffer's size) at ``file_offset`` into ``buf``
        (host or GPU memory) and returns the bytes read (fewer only at the end of the file)."""
        return self.pread(buf, size, file_offset).get()

    def pread(self, buf: Any, size: Optional[int] = None, file_offset: int = 0) -> RemoteFuture:
        """Starts :meth:`read`; returns a future of the bytes read."""
        if self._closed:
            raise ValueError(f"{self} is closed")
        capacity = _nbytes(buf)
        size = capacity if size is None else size
        if isinstance(size, bool) or not isinstance(size, int) or size < 0 or size > capacity:
            raise ValueError(f"size {size!r} does not fit a buffer of {capacity} bytes")
        if isinstance(file_offset, bool) or not isinstance(file_offset, int) or file_offset < 0:
            raise ValueError(f"file_offset must be >= 0, not {file_offset!r}")
        if file_offset + size > self._nbytes:
            # The size is known from the open: asking past it is the caller's mistake (KvikIO's
            # RemoteFile refuses it too), not a short read.
            raise ValueError(
                f"cannot read {file_offset}+{size} bytes into a {self._nbytes} bytes file ({self.url})"
            )
        n = size
        host = _host_view(buf)
        task = max(4096, int(_native.config_get("task_size")))
        pieces = [(at, min(task, n - at)) for at in range(0, n, task)]
        pool = _pool()
        outer: "concurrent.futures.Future[int]" = concurrent.futures.Future()
        if not pieces:
            outer.set_result(0)
            return RemoteFuture(outer)
        inner = [pool.submit(self._piece, buf, host, at, length, file_offset) for at, length in pieces]
        left = [len(inner)]
        lock = threading.Lock()

        def one_done(_f: Any) -> None:
            with lock:
                left[0] -= 1
                last = left[0] == 0
            if not last:
                return
            for f in inner:
                e = f.exception()
                if e is not None:
                    outer.set_exception(e)
                    return
            outer.set_result(n)

        for f in inner:
            f.add_done_callback(one_done)
        return RemoteFuture(outer)

    def _piece(self, buf: Any, host: Optional[memoryview], at: int, length: int, file_offset: int) -> None:
        ep = self._endpoint
        url, headers = ep.target(file_offset + at, length)
        resign = None
        if isinstance(ep, _S3):
            resign = lambda u: ep.sign("GET", u, {"Range": headers.get("Range", "")})  # noqa: E731
        headers = ep.sign("GET", url, headers)
        into = host[at : at + length] if host is not None else memoryview(bytearray(length))
        status, _, body = self._session.request("GET", url, headers, into=into, resign=resign)
        if not 200 <= status < 300:
            reason = body[:200].decode("utf-8", "replace").strip()
            raise _error(
                f"GET {self.url} bytes {file_offset + at}-{file_offset + at + length - 1}: HTTP {status}"
                + (f": {reason}" if reason else "")
            )
        if host is None:
            _native.copy_into(buf, at, into)
