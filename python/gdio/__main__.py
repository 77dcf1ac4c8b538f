"""``python -m gdio bench|check|...``: the ``gdio`` command line, same output."""

import sys

from . import _native


def main() -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    return _native.cli_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
