"""D-CYK as a neural-network layer: :class:`DCYK`, a :class:`torch.nn.Module`.

The module holds a codebook's symbol vectors as tensors (learnable ones as
:class:`torch.nn.Parameter`), runs the torch backend (the same algorithm as
:func:`fastdcyk.dcyk`, prepared by the same function) on a batch of sentences of different
lengths, and returns a :class:`DCYKOutput`: the decoder's readouts of every (i, j, A) as a
differentiable tensor, the charts decoded from them, and a loss against symbolic CYK.
Gradients reach the symbol vectors (terminals, nonterminals, right-child roles; and the span
indices when asked) and optional per-rule weights, so a codebook can be learned by gradient
descent at a d where random ones fail (docs/learning.md). A network can feed it instead of
words: per position, weights over the grammar's terminals (``terminals=``) or scores over
its preterminals (``preterminals=``, a tagger's), whose gradients reach that network
(docs/method.md, section 11; :func:`dcyk_input` makes them from a network's outputs; the
worked model docs/lab/treebank_model.py).

- :mod:`.layer`: :class:`DCYK`;
- :mod:`.output`: :class:`DCYKOutput`, the views of a batch's scores;
- :mod:`.loss`: its loss against symbolic CYK;
- :mod:`.inputs`: :func:`dcyk_input`, soft inputs from a network's outputs.

PyTorch is needed (``pip install torch``); ``import fastdcyk`` does not import this
package. The paper: "CYK Parsing over Distributed Representations" (Zanzotto, Satta,
Cristini, 2020), which proposes D-CYK as a layer of CYK-informed neural networks.

Examples
--------
>>> import torch, fastdcyk as fd
>>> from fastdcyk.nn import DCYK
>>> layer = DCYK(fd.Grammar.builtin("example"), 64, dtype=torch.float64)
>>> out = layer(["a a b", "a b"])
>>> out.scores.shape  # (sentences, n, n + 1, nonterminals)
torch.Size([2, 3, 4, 3])
>>> out.loss().backward()
>>> layer.nonterminal.grad.shape
torch.Size([3, 64])
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as _exc:  # pragma: no cover - the tests run with PyTorch
    raise ImportError(
        "fastdcyk.nn (D-CYK as a PyTorch layer) needs PyTorch: pip install '.[torch]' from "
        "a checkout, or pip install torch (on a machine without a GPU, the CPU build: pip "
        "install torch --index-url https://download.pytorch.org/whl/cpu)"
    ) from _exc

from fastdcyk.nn.inputs import TAG_FLOOR, dcyk_input
from fastdcyk.nn.layer import DCYK, LEARNABLE
from fastdcyk.nn.output import DCYKOutput

__all__ = ["LEARNABLE", "TAG_FLOOR", "DCYK", "DCYKOutput", "dcyk_input"]
