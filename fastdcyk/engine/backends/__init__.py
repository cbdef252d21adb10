"""Where D-CYK's arithmetic runs, a folder each: the base classes of the modes' parsers and
the driver that parses a prepared plan.

- :mod:`.numpy`: numpy with FFTs and Numba kernels, in pooled buffers, one sentence at a
  time (:mod:`.numpy.parser`, :mod:`.numpy.spectral`, :mod:`.numpy.accounting`,
  :mod:`.numpy.driver`);
- :mod:`.torch`: PyTorch, batched, on a CPU or a GPU, under autograd (:mod:`.torch.parser`,
  :mod:`.torch.spectral`, :mod:`.torch.driver`);
- :mod:`.simulation`: the capacity model's arithmetic, modelled readouts instead of vectors
  (:mod:`.simulation.parser`; :mod:`fastdcyk.capacity` drives it).

What each backend is, and where its parts are, is its record in
:mod:`fastdcyk.registry.backends` (numpy and torch; the simulation parses no sentence and has
none).
"""
