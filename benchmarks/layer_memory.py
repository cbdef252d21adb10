"""The layer's peak memory under autograd, one read-back: a 10-word G4 sentence
(``generate(G4, 1, 10, 10, seed=0)``), ``nn.DCYK(G4, 1024, variant="cleanup",
dtype=torch.float32, max_length=10, readback=...)``, forward and ``loss().backward()``, one
thread. Run each read-back in a fresh process (docs/performance.md):

    /usr/bin/time -f "%M KB" python benchmarks/layer_memory.py lstsq
    /usr/bin/time -f "%M KB" python benchmarks/layer_memory.py cancel
"""

import resource
import sys
import time

import torch

import fastdcyk as fd
from fastdcyk.nn import DCYK

torch.set_num_threads(1)
rb = sys.argv[1] if len(sys.argv) > 1 else "cancel"
g = fd.Grammar.builtin("G4")
(s,) = fd.generate(g, 1, min_len=10, max_len=10, seed=0)
layer = DCYK(g, 1024, variant="cleanup", dtype=torch.float32, max_length=10, readback=rb)
t = time.perf_counter()
layer([s]).loss().backward()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print(f"{rb}: {time.perf_counter() - t:.1f} s, peak RSS {peak:.2f} GB")
