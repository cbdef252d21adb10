"""Moved to :mod:`fastdcyk.hrr.fft`; names read from here warn and forward."""

from fastdcyk._moved import forward

__getattr__ = forward(__name__, "fastdcyk.hrr.fft")
