"""The torch backend: the numpy backend's algorithm in PyTorch, batched and differentiable.

- :mod:`.parser`: the symbol vectors as tensors, the torch array namespace and
  :class:`~.parser.TorchParser`, the base class of the modes' torch parsers;
- :mod:`.spectral`: the table as 2-D half spectra in torch;
- :mod:`.driver`: the differentiable core (:func:`~.driver.parse_tensors`) and a plan's
  sentences parsed in one batch (:func:`~.driver.parse`, the record's driver).

Nothing here is imported by ``import fastdcyk``: PyTorch loads with the first torch parse.
"""
