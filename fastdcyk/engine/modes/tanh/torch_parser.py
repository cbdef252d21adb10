"""The tanh gate in the torch backend: :class:`TorchTraceParser` writing tanh of each
readout (docs/method.md, section 4.7), batched and differentiable."""

from __future__ import annotations

import torch

from fastdcyk.engine.modes.trace.torch_parser import TorchTraceParser

__all__ = ["TorchTanhParser"]


class TorchTanhParser(TorchTraceParser):
    """The tanh gate's parser, batched: P_A = tanh(beta tr(M) / d) I."""

    def gate(self, tvals: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.opt.beta * tvals)
