"""The D-CYK algorithm, written once for every mode and backend.

- :mod:`.schedule`: the CYK schedule (cells, orders, counts, pruning, log, checks,
  progress) and the protocol of a parser (:class:`~.schedule.CellParser`);
- :mod:`.rules`: the grammar's rules as index arrays, their spectra, the rule layers;
- :mod:`.readback`: the least-squares read-back of a cell (its candidates and solve);
- :mod:`.certificate`: how far each cell's read can be trusted;
- :mod:`.splits`: a cell's splits and the items they propose;
- :mod:`.decode`: the decoders of any P_left (the paper's Algorithm 4, the trace one);
- :mod:`.soft`: soft terminals (a distribution over the words at a position);
- :mod:`.arrays`: the few array operations the shared code needs, per array library;
- :mod:`.deferred`: an array made when first asked for;
- :mod:`.result`: :class:`~.result.DCYKResult`, what a parse returns on every backend.

Nothing here knows a backend or a mode: the modes (:mod:`fastdcyk.engine.modes`) and the
backends (:mod:`fastdcyk.engine.backends`) build on it.
"""
