"""``python -m fastdcyk.cli``."""

import sys

from fastdcyk.cli import main

sys.exit(main())
