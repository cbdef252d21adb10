"""The capacity model's arithmetic: the schedule over modelled readouts instead of vectors.

- :mod:`.parser`: :class:`~.parser.Simulation`, the base class of the modes' simulations,
  which :func:`fastdcyk.capacity.predict` drives.
"""
