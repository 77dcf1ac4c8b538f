#!/usr/bin/env python3
"""Rewrites a copy of KvikIO's test_http_io.py (bench/kvikio-tests, a snapshot of KvikIO's main
before the 26.10.0 release) so that its two retry-message checks read where the released 26.10.0
wheel writes that message: KvikIO's logger on standard error, at KVIKIO_LOG_LEVEL=WARN, as
`[pid][time][warning] KvikIO: ...` (BENCHMARKS.md session 42/43). The snapshot's checks read
standard output, where the older `std::cout` retry loop wrote it. Standard error also carries
the test's HTTP server's access log (`127.0.0.1 - - [...] ...`), so the checks take the lines
that KvikIO's logger wrote (those that begin with its bracketed fields) and drop those fields.
Nothing else changes: the same tests, the same expected words, exactly one such line each.

usage: kvikio-http-release-logging.py PATH/test_http_io.py   (rewritten in place)
"""
import sys

path = sys.argv[1]
text = open(path).read()
old = 'records = captured.out.strip().split("\\n")'
new = (
    'records = [re.sub(_KVIKIO_LOG, "", r) for r in captured.err.strip().split("\\n") '
    'if re.match(_KVIKIO_LOG, r)]'
)
n = text.count(old)
if n != 2:
    sys.exit(f"{path}: expected the 2 retry-message checks, found {n}: not the stored snapshot")
text = text.replace(old, new)
text = 'import re\n\n_KVIKIO_LOG = r"^(\\[[^\\]]*\\])+ "\n' + text
open(path, "w").write(text)
print(f"{path}: the 2 retry-message checks now read KvikIO's log on standard error")
