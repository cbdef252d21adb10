"""The numpy backend: D-CYK's arithmetic over FFTs and Numba kernels, into reused buffers.

- :mod:`.parser`: :class:`~.parser.NumpyParser`, the base class of the modes' numpy parsers;
- :mod:`.spectral`: the table as 2-D half spectra, shared by the scalar gates' parsers;
- :mod:`.accounting`: what a numpy parse holds and costs, in the units the modes state it;
- :mod:`.driver`: a plan's sentences parsed one at a time (the record's driver).
"""
