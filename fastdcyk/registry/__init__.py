"""What exists: the detection modes and the backends, as two tables of records.

- :mod:`.modes`: one :class:`~fastdcyk.registry.modes.Mode` record per detection mode (how a
  cell is read and gated), with the parts each backend parses it with;
- :mod:`.backends`: one :class:`~fastdcyk.registry.backends.Backend` record per backend
  (where the arithmetic runs), with its driver and what it supports.

Both import nothing of fastdcyk: their parts are named ``"module:attribute"`` and imported on
first use (:mod:`.parts`), so that the options (:func:`fastdcyk.options.resolve`), the engine
and the applications can all ask them, and the records of the torch backend load PyTorch only
when used. docs/architecture.md shows where each record's parts live and how to add one.
"""
