#!/usr/bin/env python3
"""Rewrites a copy of KvikIO's test_http_io.py (bench/kvikio-tests, a snapshot of KvikIO's main
before the 26.10.0 release) so that its two retry-message checks read where the released 26.10.0
wheel writes that message: KvikIO's logger on standard error, at KVIKIO_LOG_LEVEL=WARN, as
`[pid][time][warning] KvikIO: ...` (BENCHMARKS.md session 42/43). The snapshot's checks read
standard output, where the older `std::cout` retry loop wrote it. Nothing else changes: the
same tests, the same expected words, one line each.

usage: kvikio-http-release-logging.py PATH/test_http_io.py   (rewritten in place)
"""
import sys

path = sys.argv[1]
text = open(path).read()
old = 'records = captured.out.strip().split("\\n")'
new = (
    'records = [re.sub(r"^(\\[[^\\]]*\\])+ ", "", r) '
    'for r in captured.err.strip().split("\\n")]'
)
n = text.count(old)
if n != 2:
    sys.exit(f"{path}: expected the 2 retry-message checks, found {n}: not the stored snapshot")
text = text.replace(old, new)
if "\nimport re\n" not in text:
    text = "import re\n" + text
open(path, "w").write(text)
print(f"{path}: the 2 retry-message checks now read KvikIO's log on standard error")
