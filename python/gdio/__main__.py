"""``python -m gdio bench|check|...``: the ``gdio`` command line, same output."""

import signal
import sys
import threading

from . import _native


def main() -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    # Python's SIGINT handler only sets a flag that Python code would check, and the command
    # runs in native code to the end: Ctrl-C would do nothing. With the default action, Ctrl-C
    # ends it as it ends the `gdio` executable (whose own handlers remove its temporary files).
    main_thread = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.SIG_DFL) if main_thread else None
    try:
        return _native.cli_main(sys.argv[1:])
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


if __name__ == "__main__":
    sys.exit(main())
