"""``python -m fastdcyk``: the command line, as ``fastdcyk`` (:mod:`fastdcyk.cli`)."""

import sys

from fastdcyk.cli import main

if __name__ == "__main__":
    sys.exit(main())
