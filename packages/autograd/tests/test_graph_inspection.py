"""grad_fn.next_functions and grad_fn.name(): the graph PyTorch users walk."""

from __future__ import annotations

import gc
from typing import Any

import lamina.autograd as ag
import numpy as np
import torch
from lamina.autograd._function import AccumulateGrad, Function


def _walk(node: Any, leaves: dict[int, str]) -> Any:
    """The graph under ``node`` as nested tuples, leaves by name, op nodes by arity."""
    if node is None:
        return None
    if not node.next_functions:  # an AccumulateGrad
        return leaves[id(node.variable)]
    return tuple(_walk(child, leaves) for child, index in node.next_functions)


def test_graph_structure_matches_torch() -> None:
    a_np, b_np, c_np = np.array([2.0, 3.0]), np.array([4.0, 5.0]), np.array([1.0, -1.0])
    a = ag.tensor(a_np, requires_grad=True)
    b = ag.tensor(b_np, requires_grad=True)
    c = ag.tensor(c_np)  # needs no gradient
    ta = torch.tensor(a_np, requires_grad=True)
    tb = torch.tensor(b_np, requires_grad=True)
    tc = torch.tensor(c_np)
    ours = ((a * b + a).exp() * c).sum()
    theirs = ((ta * tb + ta).exp() * tc).sum()
    shape = _walk(ours.grad_fn, {id(a): "a", id(b): "b"})
    assert shape == _walk(theirs.grad_fn, {id(ta): "a", id(tb): "b"})
    assert shape == ((((("a", "b"), "a"),), None),)
    # PyTorch's pairs: (node, output index), 0 for single-output nodes
    assert all(i == 0 for _, i in ours.grad_fn.next_functions[0][0].next_functions)


def test_names_and_accumulate_grad_nodes() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    assert y.grad_fn.name() == "SumBackward" and y.grad_fn.name == "sum"  # op name kept
    mul = y.grad_fn.next_functions[0][0]
    assert mul.name() == "MulBackward"
    (left, i), (right, j) = mul.next_functions
    assert isinstance(left, AccumulateGrad) and left.variable is w and (i, j) == (0, 0)
    assert left is right  # one node per leaf, as in PyTorch
    assert left.name() == "AccumulateGrad" and left.next_functions == ()
    assert repr(left) == "<AccumulateGrad>"
    # torch spells the same node "torch::autograd::AccumulateGrad"
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    tnode = (tw * tw).sum().grad_fn.next_functions[0][0].next_functions[0][0]
    assert tnode.name().endswith(left.name()) and tnode.variable is tw


def test_inspection_keeps_nothing_alive_and_survives_backward() -> None:
    from lamina.autograd import _function
    w = ag.ones(3, requires_grad=True)
    y = (w.exp() * 2).sum()
    node = y.grad_fn.next_functions[0][0].next_functions[0][0]
    y.backward()  # the nodes stay walkable after their saved tensors are freed
    assert node.name() == "ExpBackward"
    assert node.next_functions[0][0].variable is w
    del node
    gc.collect()
    assert not _function._accumulators


def test_custom_functions_get_a_node_name() -> None:
    class Square(Function):
        name = "square_example"
        save_inputs = True

        def forward(self, x: Any) -> Any:
            return x * x

        def backward(self, g: ag.Tensor) -> tuple[ag.Tensor]:
            (x,) = self.inputs
            return (g * 2 * x,)

    x = ag.tensor([3.0], requires_grad=True)
    out = Square.apply(x)
    assert out.grad_fn.name() == "SquareBackward" and out.grad_fn.name == "square_example"
    assert out.grad_fn.next_functions[0][0].variable is x
