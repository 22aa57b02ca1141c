"""nn.GRU and nn.GRUCell run their recurrence as the fused op ``gru_layer`` (issue 30).

One graph node per layer and direction instead of ~20 per step, with the same values
and gradients as torch.nn.GRU, to second order (test_gru_conv_torch.py checks first
order in every configuration).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close
from lamina import autograd as ag
from lamina import nn


def _node_counts(out: ag.Tensor) -> Counter[str]:
    """How many nodes of each kind the graph behind ``out`` holds."""
    # seen keeps every node alive: ids of freed AccumulateGrad wrappers could be reused
    seen, todo, counts = {}, [out.grad_fn], Counter()
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        counts[type(node).__name__] += 1
        todo.extend(n for n, _ in getattr(node, "next_functions", ()))
    return counts


@pytest.mark.parametrize("bidirectional", [False, True])
def test_gru_graph_has_one_fused_node_per_layer_and_direction(device, bidirectional):
    m = nn.GRU(3, 4, num_layers=2, bidirectional=bidirectional, device=device)
    out, h_n = m(ag.ones(7, 2, 3, device=device))
    counts = _node_counts(out + h_n.sum())
    assert counts["GRULayer"] == 2 * (2 if bidirectional else 1)
    assert counts["Sigmoid"] == 0 and counts["Tanh"] == 0  # no per-step gate ops
    assert sum(counts.values()) < 60  # per step ops would be ~20 x 7 steps x layers


def test_gru_cell_is_one_fused_node(device):
    h = nn.GRUCell(3, 4, device=device)(ag.ones(2, 3, device=device))
    counts = _node_counts(h)
    assert counts["GRULayer"] == 1 and counts["Sigmoid"] == 0


def _first_and_second(mod, ins, params, cot, dirs, lib, **like):
    """Gradients of <mod(*ins)[0], cot> w.r.t. ins (recorded), then of <those, dirs>
    w.r.t. ins and params; ``lib`` is lamina.autograd or torch."""
    grad = ag.grad if lib is ag else torch.autograd.grad
    out, _ = mod(*ins)
    first = grad((out * lib.tensor(cot, **like)).sum(), ins, create_graph=True)
    total = sum((g * lib.tensor(d, **like)).sum() for g, d in zip(first, dirs))
    return list(first), list(grad(total, ins + params, allow_unused=True))


@pytest.mark.parametrize("bias", [True, False])
def test_gru_second_derivatives_match_torch(device, bias):
    """A bidirectional 2-layer GRU (the reverse direction runs the op on the flipped
    sequence) against torch.nn.GRU: gradients of gradients of input, h_0 and weights."""
    t = torch.nn.GRU(3, 4, num_layers=2, bidirectional=True, bias=bias).double()
    m = nn.GRU(3, 4, num_layers=2, bidirectional=True, bias=bias, device=device,
               dtype="float64")
    m.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    rng = np.random.default_rng(3)
    x, h0 = rng.standard_normal((5, 2, 3)), rng.standard_normal((4, 2, 4))
    cot = rng.standard_normal((5, 2, 8))
    dirs = [rng.standard_normal(x.shape), rng.standard_normal(h0.shape)]
    ours = [ag.tensor(a, dtype="float64", device=device, requires_grad=True) for a in (x, h0)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, h0)]
    first, second = _first_and_second(m, ours, list(m.parameters()), cot, dirs, ag,
                                      dtype="float64", device=device)
    tfirst, tsecond = _first_and_second(t, theirs, list(t.parameters()), cot, dirs, torch)
    for a, b in zip(first + second, tfirst + tsecond):
        if b is None:  # torch: no path (a weight that only enters linearly, say)
            assert a is None or np.allclose(a.detach().numpy(), 0.0)
        else:
            assert_close(a, b, 1e-9, 1e-9)
