"""The tanh gate (docs/method.md, section 4.7), for learning: the trace gate with tanh
for sigma, P_A = tanh(beta tr(M) / d) I. A nonterminal no rule derives writes 0 (sigma
writes sigma(-beta / 2) > 0 there), and the gate's slope there is beta (sigma's is almost 0
at the slopes that parse): a layer's rule weights reach the string's score through sums
and products not flattened near 0 (:func:`fastdcyk.learn_grammar`'s ``gate="tanh"``). It
is no parser: tanh amplifies the crosstalk near 0 by beta where sigma suppresses it. The
table, its updates, its buffers and its cost are the trace gate's.

- :mod:`.torch_parser`: the torch backend's trace parser with the gate changed (batched,
  differentiable); there is no numpy parser.
"""
