"""Time a command's first line of output and its whole run.

``python benchmarks/first_line.py fastdcyk capacity --grammar G0 --length 500 --dims 64``
prints the command's output with the seconds to its first line and to its end: how long a
user waits for the capacity model's estimate and for its answer (docs/performance.md).
"""

from __future__ import annotations

import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for k, line in enumerate(proc.stdout):
        stamp = f"[first line after {time.perf_counter() - t0:.1f} s] " if k == 0 else ""
        print(stamp + line, end="", flush=True)
    rc = proc.wait()
    print(f"[ended after {time.perf_counter() - t0:.1f} s, exit status {rc}]")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
