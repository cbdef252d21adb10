"""The weighted table (docs/method.md, section 10, "Through the table"): the clean-up gate
with ``weights="table"``, writing each item with an amplitude that carries a PCFG's
Viterbi score and reading the scores back by least squares. Numpy backend only; its d x d
arrays and its cost are the clean-up gate's (:mod:`fastdcyk.engine.modes.cleanup`).

- :mod:`.numpy_parser`: the numpy backend's parser, on the clean-up parser.
"""
