"""The reverse-mode engine: ``backward`` and ``grad``.

One pass works like this:

1. Order the nodes reachable from the outputs so that every node comes
   before the nodes that produced its inputs (an iterative depth-first search:
   a 100,000-op chain does not hit Python's recursion limit).
2. Walk that order once. Each node receives the sum of the gradients sent to
   its output, calls its op's ``backward`` rule, sums each returned gradient
   back to the shape of the matching input (undoing implicit broadcasting, so
   that no rule has to), and sends it on: to the parent node, or into a leaf's
   ``.grad``.
3. Unless ``retain_graph``, each node drops its saved tensors as soon as it
   has run, which frees a training step's activations.

With ``create_graph`` the rules run with recording on, so the gradients
are themselves differentiable.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray, ShapeError

from . import _function
from . import _grad_mode as grad_mode
from ._function import Function
from ._tensor_base import Tensor, TensorBase, make, new, ones_like_data


def topological_order(roots: Sequence[Function]) -> list[Function]:
    """Nodes reachable from ``roots``, each before every node it depends on."""
    order: list[Function] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(root.next))]
        while stack:
            node, parents = stack[-1]
            for parent in parents:
                if isinstance(parent, Function) and id(parent) not in seen:
                    seen.add(id(parent))
                    stack.append((parent, iter(parent.next)))
                    break
            else:
                stack.pop()
                order.append(node)
    order.reverse()
    return order


def sum_to_shape(grad: TensorBase, shape: tuple[int, ...]) -> TensorBase:
    """Sums ``grad`` over the axes that broadcasting added or stretched.

    Args:
        grad: gradient with the broadcast shape, e.g. ``(B, N, M)``.
        shape: the input's shape, e.g. ``(N, 1)``.

    Returns:
        The gradient with ``shape``.
    """
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1)
    if axes:
        grad = grad.sum(dim=axes)
    return grad.reshape(shape)


def _seed(outputs: Sequence[TensorBase], grad_outputs: Sequence[Any] | None,
          op: str) -> list[tuple[TensorBase, TensorBase]]:
    """Pairs each output with the gradient that starts the backward pass."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise ShapeError(f"{op}: got {len(outputs)} outputs but {len(grad_outputs)} gradients")
    pairs = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not out.requires_grad:  # the property: a stale view takes its fresh grad_fn
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = make(ones_like_data(out._data))
        elif not isinstance(g, TensorBase):
            g = new(g, dtype=out.dtype, device=out.device)
        if g._data.shape != out._data.shape:
            raise ShapeError(
                f"{op}: gradient {i} has shape {g.shape} but output {i} has shape "
                f"{out.shape}; pass a gradient of the output's shape")
        pairs.append((out, g))
    return pairs


def _accumulate(store: dict[int, TensorBase], key: int, grad: TensorBase) -> None:
    old = store.get(key)
    store[key] = grad if old is None else old + grad


def _add_into(store: dict[int, TensorBase], owned: dict[int, TensorBase],
              unwritten: dict[int, tuple[NDArray, set[int]]] | None, key: int,
              node: Function, grad: TensorBase) -> None:
    """Adds ``node``'s input gradient into ``store[key]`` in place (``add_grad_into``),
    first making it a buffer this pass owns: zeros, or a copy of what was there
    (which another node's rule may also have handed elsewhere).

    A slice of whole rows along axis 0 (``node.row``: q, k and v of ``qkv[0]``,
    ``qkv[1]``, ``qkv[2]``) writes into a buffer left unfilled, with ``unwritten``
    (None where ``store`` holds leaves) noting the rows written: the rest are
    zeroed only when the buffer is read (:func:`_fill_rows`), so slices that cover
    the tensor never write zeros at all."""
    old = store.get(key)
    row: int | None = getattr(node, "row", None)
    if old is None:
        lazy = row is not None and unwritten is not None
        data = _input_buffer(node, grad._data.device, zeroed=not lazy)
        old = store[key] = owned[key] = make(data)
        if row is not None and unwritten is not None:
            unwritten[key] = (data, {row})
        node.add_grad_into(grad._data, data, True)
        return
    if unwritten is not None and key in unwritten:
        rows = unwritten[key][1]
        if row is not None and row not in rows:
            rows.add(row)
            node.add_grad_into(grad._data, old._data, True)
            return
        _fill_rows(*unwritten.pop(key))
    elif owned.get(key) is not old:
        old = store[key] = owned[key] = make(old._data.copy())
    node.add_grad_into(grad._data, old._data, False)


def _input_buffer(node: Function, device: Any, zeroed: bool) -> NDArray:
    """A buffer of ``node``'s input shape (zeros, or unfilled), in its input's memory
    order where the node noted one (``input_order``: a slice of a permuted view), else
    compact."""
    shape, order = node.shapes[0], getattr(node, "input_order", None)
    make_buffer = nd.zeros if zeroed else nd.empty
    if order is None:
        return make_buffer(shape, dtype=node.dtypes[0], device=device)
    data = make_buffer(tuple(shape[i] for i in order), dtype=node.dtypes[0], device=device)
    return data.permute(tuple(order.index(i) for i in range(len(order))))


def _fill_rows(data: NDArray, written: set[int]) -> None:
    """Zeros in the rows (along axis 0) of ``data`` that no slice wrote, a run at a time."""
    start = 0
    for row in sorted(written) + [data.shape[0]]:
        if start < row:
            data[start:row] = 0.0
        start = row + 1


def run_backward(pairs: list[tuple[TensorBase, TensorBase]], retain_graph: bool, create_graph: bool,
                 capture: dict[int, int] | None = None) -> dict[int, Any]:
    """Propagates gradients from ``pairs`` of (output, gradient) to the leaves.

    Without ``capture`` (``Tensor.backward``), gradients accumulate into the
    ``.grad`` of leaves and of tensors that called ``retain_grad()``. With
    ``capture`` (``grad()``), mapping ``id`` of a leaf tensor or of a node to
    a slot, nothing is written to ``.grad`` and the gradients reaching those
    keys are returned, keyed by ``id``.

    The loop is written out (no helper per node or per edge): it runs once per
    node of every training step, so each Python call saved is eager overhead saved.
    """
    captured: dict[int, TensorBase] = {}
    leaves: dict[int, TensorBase] = {}
    pending: dict[int, TensorBase] = {}
    owned: dict[int, TensorBase] = {}  # key -> a gradient this pass made, safe to add into
    unwritten: dict[int, tuple[NDArray, set[int]]] = {}  # pending key -> rows written so far
    keep: dict[int, Any] = {}  # ids stay valid only while their objects live
    handed: set[tuple[int, int]] = set()  # (buffer, offset) of each gradient stored in a .grad
    previous = grad_mode._state.enabled
    grad_mode._state.enabled = create_graph
    try:
        roots: list[Function] = []
        for out, g in pairs:
            if out.grad_fn is None:
                keep[id(out)] = out
                _accumulate(leaves, id(out), g)
            else:
                keep[id(out.grad_fn)] = out.grad_fn
                _accumulate(pending, id(out.grad_fn), g)
                roots.append(out.grad_fn)
        order = topological_order(roots)
        flush_after = _last_uses(order) if capture is None else {}
        for index, node in enumerate(order):
            grad = pending.pop(id(node), None)
            owned.pop(id(node), None)  # its gradient is consumed: not held past its use
            if unwritten and id(node) in unwritten:
                _fill_rows(*unwritten.pop(id(node)))
            if grad is not None:
                if capture is not None:
                    if id(node) in capture:
                        _accumulate(captured, id(node), grad)
                elif node._retained is not None:
                    _store_grad(node._retained(), grad, create_graph, handed)
                if node.add_grad_into is not None and not create_graph \
                        and _function.observer is None and grad._data._dtype is node.dtypes[0]:
                    edge = node.next[0]
                    if edge is not None:
                        keep[id(edge)] = edge
                        if isinstance(edge, Function):
                            _add_into(pending, owned, unwritten, id(edge), node, grad)
                        else:
                            _add_into(leaves, owned, None, id(edge), node, grad)
                    grads: tuple[TensorBase | None, ...] = ()
                else:
                    grads = (node.backward(grad) if _function.observer is None
                             else _function.observer.backward(node, grad))
                for edge, shape, dtype, edge_grad in zip(node.next, node.shapes, node.dtypes,
                                                         grads):
                    if edge is None or edge_grad is None:
                        continue
                    if edge_grad._data._dtype is not dtype:
                        # An op promoted its inputs (float32 * float64): each input's
                        # gradient is in that input's own dtype, as in PyTorch.
                        edge_grad = edge_grad.to(dtype=dtype)
                    if edge_grad._data.shape != shape:
                        edge_grad = sum_to_shape(edge_grad, shape)
                    key = id(edge)
                    keep[key] = edge
                    store = pending if isinstance(edge, Function) else leaves
                    if unwritten and key in unwritten:
                        _fill_rows(*unwritten.pop(key))
                    old = store.get(key)
                    store[key] = edge_grad if old is None else old + edge_grad
                if not retain_graph:
                    node.release()
            # a leaf no later node points at has its whole gradient: store it now,
            # so its post-accumulate hooks run while the rest of backward goes on
            if index in flush_after:
                for key in flush_after[index]:
                    if key in leaves:
                        owned.pop(key, None)
                        _store_grad(keep[key], leaves.pop(key), create_graph, handed)
        for key, grad in leaves.items():
            if capture is None:
                _store_grad(keep[key], grad, create_graph, handed)
            elif key in capture:
                _accumulate(captured, key, grad)
    finally:
        grad_mode._state.enabled = previous
    return captured


def _last_uses(order: list[Function]) -> dict[int, list[int]]:
    """Maps a position in ``order`` to the leaves (by ``id``) last pointed at there."""
    last: dict[int, int] = {}
    for index, node in enumerate(order):
        for edge in node.next:
            if edge is not None and not isinstance(edge, Function):
                last[id(edge)] = index
    after: dict[int, list[int]] = {}
    for key, index in last.items():
        after.setdefault(index, []).append(key)
    return after


def _store_grad(tensor: TensorBase | None, grad: TensorBase, create_graph: bool,
                handed: set[tuple[int, int]]) -> None:
    """Accumulates into ``tensor.grad`` (PyTorch: sum across backward calls).

    Each ``.grad`` gets its own writable storage, as in PyTorch: a rule can
    hand one array to several inputs (``a + b`` gives both the same gradient,
    as do an RNN's two biases), so an array already stored in this pass is
    copied, or an in-place op on one ``.grad`` (``p.grad.mul_(c)``) would
    change the other; a broadcast view (``x.sum()``'s gradient) is copied too,
    since nothing can be written through it.
    """
    if tensor is None:
        return
    if not create_graph:
        data = grad._data
        where = (id(data._buf), data._offset)
        if where in handed or (0 in data._strides and data.size > 1):
            data = data.copy()
            where = (id(data._buf), 0)
        handed.add(where)
        grad = make(data)  # detached (a fresh gradient: no counter to share)
    tensor.grad = grad if tensor.grad is None else tensor.grad + grad
    if tensor.grad_fn is None and tensor._post_hooks:
        for hook in list(tensor._post_hooks.values()):
            hook(tensor)


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False) -> None:
    """Accumulates the gradients of ``tensors`` into the leaves' ``.grad``.

    Args:
        tensors: outputs to differentiate.
        grad_tensors: one gradient per output (``None`` for a scalar output,
            meaning 1).
        retain_graph: keep the saved tensors for another backward; defaults to
            ``create_graph``.
        create_graph: record the backward pass, for higher-order gradients.
    """
    outputs = [tensors] if isinstance(tensors, TensorBase) else list(tensors)
    if isinstance(grad_tensors, TensorBase) or grad_tensors is None and len(outputs) == 1:
        grad_tensors = [grad_tensors]
    pairs = _seed(outputs, grad_tensors, "backward")
    retain = create_graph if retain_graph is None else retain_graph
    run_backward(pairs, retain, create_graph)


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned, not stored.

    Args:
        outputs: tensors to differentiate (scalars unless ``grad_outputs``).
        inputs: tensors to differentiate with respect to (leaves or not).
        grad_outputs: one gradient per output, as in ``backward``.
        retain_graph: keep the graph; defaults to ``create_graph``.
        create_graph: record the computation, for higher-order gradients.
        allow_unused: return ``None`` for an input that the outputs do not
            depend on, instead of raising.

    Returns:
        One gradient per input, shaped like it.

    Example:
        >>> import lamina.autograd as ag
        >>> x = ag.tensor([1.0, 2.0], requires_grad=True)
        >>> (g,) = ag.grad((x ** 3).sum(), x, create_graph=True)
        >>> g.tolist(), ag.grad(g.sum(), x)[0].tolist()
        ([3.0, 12.0], [6.0, 12.0])
    """
    outs = [outputs] if isinstance(outputs, TensorBase) else list(outputs)
    ins = [inputs] if isinstance(inputs, TensorBase) else list(inputs)
    if isinstance(grad_outputs, TensorBase) or grad_outputs is None and len(outs) == 1:
        grad_outputs = [grad_outputs]
    for i, t in enumerate(ins):
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {i} does not require grad")
    keys = [id(t) if t.grad_fn is None else id(t.grad_fn) for t in ins]
    pairs = _seed(outs, grad_outputs, "grad")
    retain = create_graph if retain_graph is None else retain_graph
    found = run_backward(pairs, retain, create_graph, {k: i for i, k in enumerate(keys)})
    result = []
    for i, key in enumerate(keys):
        if key not in found and not allow_unused:
            raise RuntimeError(
                f"grad: input {i} appears to not have been used in the graph. "
                "Set allow_unused=True if this is the desired behavior.")
        result.append(found.get(key))
    return tuple(result)


def retain_grad(tensor: TensorBase) -> None:
    """Makes a non-leaf ``tensor`` keep its ``.grad`` after backward."""
    if tensor.grad_fn is not None:
        tensor.grad_fn._retained = weakref.ref(tensor)
