"""Moved to :mod:`fastdcyk.hrr.operators`; names read from here warn and forward."""

from fastdcyk._moved import forward

__getattr__ = forward(__name__, "fastdcyk.hrr.operators")
