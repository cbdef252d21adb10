"""What the dense matrices made on access save, and the compiled sweep's time: the figures
of docs/performance.md, "The sweep in the table's precision".

- the numpy backend, one 5-word sentence at a time at d = 256 (the random grammar of 20
  nonterminals of benchmarks/bench_peer.py, 12 sentences, best of 5 passes), with the dense
  P_left made by the parse (``NumpySpectralParser.defers_dense = False``, as before) and made on
  access (the default);
- the torch backend's batch of 32 on the CPU at 5 and 10 words, d = 256, the same two ways;
- one sweep of the column kernel (write, previous subtraction and readout) and one
  ``kernels.row_dots`` at d = 1024 in complex64, one thread (best of 30).

    python benchmarks/deferred_dense.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_peer import best, peer_grammar, sentences  # noqa: E402

import fastdcyk as fd  # noqa: E402
from fastdcyk import threads  # noqa: E402
from fastdcyk.engine.backends.numpy import spectral as numpy_spectral  # noqa: E402
from fastdcyk.engine.modes.cleanup import columns  # noqa: E402
from fastdcyk.hrr import kernels  # noqa: E402


def made_by_parse(cls: type, eager: bool) -> None:
    """Make the parse build its dense matrices (``eager``), or defer them (the default)."""
    cls.defers_dense = not eager


def main() -> None:
    g = peer_grammar("20")
    cb = fd.engine.default_codebook(g, 256, 0, unitary=True)
    print(f"fastdcyk {fd.__version__} from {Path(fd.__file__).parent}")
    sents = sentences(g, 5, 12)
    for eager in (True, False):
        made_by_parse(numpy_spectral.NumpySpectralParser, eager)
        s = best(lambda: [fd.dcyk(g, w, cb) for w in sents], 5) / len(sents)
        how = "by the parse" if eager else "on access"
        print(f"numpy, 5 words, d = 256, P_left made {how}: {s * 1e3:.2f} ms a sentence")
    made_by_parse(numpy_spectral.NumpySpectralParser, False)
    try:
        from fastdcyk.engine.backends.torch import spectral as torch_spectral
    except ImportError:  # no torch
        torch_spectral = None
    if torch_spectral is not None:
        for length in (5, 10):
            batch = sentences(g, length, 32)
            for eager in (True, False):
                made_by_parse(torch_spectral.TorchSpectralParser, eager)

                def parse(batch=batch):
                    return fd.dcyk_batch(g, batch, cb, backend="torch", batch_size=32)

                s = best(parse, 5)
                how = "by the parse" if eager else "on access"
                print(f"torch, batch 32, {length} words, made {how}: {s * 1e3:.1f} ms a batch")
        made_by_parse(torch_spectral.TorchSpectralParser, False)
    d, h = 1024, 513
    rng = np.random.default_rng(0)

    def c64(*shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)

    left, table, g_j = c64(h, d), c64(h, d), c64(h, d)
    lv_w, lv_t, ci_t, idx = c64(h), c64(h), c64(d), c64(d)
    q = np.zeros(h, np.complex128)
    with threads.limit(1):
        sweep = best(
            lambda: columns._sweep_write_take_read(left, table, g_j, lv_w, lv_t, ci_t, q, idx), 30
        )
        read = best(lambda: kernels.row_dots.serial(g_j, table, idx, q), 30)
    print(f"d = 1024, complex64: a cell's sweep {sweep * 1e3:.2f} ms, row_dots {read * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
