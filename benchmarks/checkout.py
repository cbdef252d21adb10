"""Import fastdcyk from another checkout (before and after a change), in scripts that time
both in alternating fresh processes."""

from __future__ import annotations

import sys
from pathlib import Path


def use_checkout(root: str | Path) -> None:
    """Make ``import fastdcyk`` load the package of the checkout ``root``: the editable
    install's import hook, ahead of ``sys.path``, is taken out first. Call it before
    anything imports fastdcyk."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, str(Path(root).resolve()))
