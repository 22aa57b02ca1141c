"""ag.compile: captured replays agree with eager, and whatever a replay cannot repeat
runs eagerly (or raises with fullgraph) instead of giving a wrong result."""

from __future__ import annotations

import logging
from typing import Any

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
from conftest import DEVICES, device_dtypes
from harness import as_list, build, to_numpy
from op_records import RECORDS, OpRecord, Sample

CASES = [pytest.param(rec, dev, dt, id=f"{rec.name}-{dev}-{dt}")
         for rec in RECORDS for dev, dt in device_dtypes()]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


def _other_values(sample: Sample) -> Sample:
    """The sample with every float array changed, keeping signs and domains (positive
    stays positive, away from zero stays away) and leaving index arrays alone."""
    args = tuple(np.asarray(a * 1.5 + np.sign(a) * 0.25)
                 if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                 for a in sample.args)
    return Sample(args, sample.kwargs, sample.smooth)


def _tensor_positions(args: list[Any]) -> list[int]:
    return [i for i, a in enumerate(args) if isinstance(a, ag.Tensor)]


def _with_tensors(rec: OpRecord, args: list[Any], sample: Sample) -> Any:
    """``rec.fn`` of the sample's arguments, its tensors given as the only arguments
    (what compile keys on); the other arguments are bound."""
    where = _tensor_positions(args)

    def call(*tensors: ag.Tensor) -> Any:
        full = list(args)
        for i, t in zip(where, tensors):
            full[i] = t
        return rec.fn(*full, **sample.kwargs)

    return call


def _assert_same(got: Any, want: Any, what: str) -> None:
    got, want = as_list(got), as_list(want)
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        if not isinstance(w, ag.Tensor):
            assert g == w, what
            continue
        assert (g.shape, g.dtype, g.device) == (w.shape, w.dtype, w.device), what
        np.testing.assert_array_equal(to_numpy(g), to_numpy(w), err_msg=what)


@pytest.mark.parametrize("rec, device, dtype", CASES)
def test_op_records_replay_gradients_as_eager(rec: OpRecord, device: str, dtype: str) -> None:
    """Every differentiable op record in grad mode: a replay's values and the gradients
    of every input that requires grad equal eager's exactly."""
    if not rec.differentiable:
        pytest.skip(f"{rec.name} has no gradient")
    if rec.kernel and not nd.get_device(device).kernel_dtypes.get(rec.kernel):
        pytest.skip(f"device {device} has no optional {rec.kernel}")
    for sample in rec.samples:
        first, _, leaves = build(rec, sample, device, dtype)
        if not leaves:
            continue
        where = _tensor_positions(first)
        call = _with_tensors(rec, first, sample)

        compiled = ag.compile(call)
        for k, values in enumerate((sample, _other_values(sample), sample)):
            results = []
            for fn in (compiled, call):
                args, _, leaves = build(rec, values, device, dtype)
                out = as_list(fn(*[args[i] for i in where]))
                rng = np.random.default_rng(k)  # the same cotangents for both
                diff = [o for o in out if isinstance(o, ag.Tensor) and o.requires_grad]
                ag.backward(diff, [ag.tensor(rng.standard_normal(o.shape), dtype=o.dtype,
                                             device=device) for o in diff])
                results.append((out, [x.grad for x, _ in leaves]))
            (got, got_grads), (want, want_grads) = results
            _assert_same(got, want, f"{rec.name} values")
            _assert_same(got_grads, want_grads, f"{rec.name} gradients")


@pytest.mark.parametrize("rec, device, dtype", CASES)
def test_op_records_replay_as_eager(rec: OpRecord, device: str, dtype: str) -> None:
    """Every op record, under no_grad: the capturing call and a replay on other values
    give eager's results exactly (or the signature runs eagerly, also exactly)."""
    if rec.kernel and not nd.get_device(device).kernel_dtypes.get(rec.kernel):
        pytest.skip(f"device {device} has no optional {rec.kernel}")
    for sample in rec.samples:
        first, _, _ = build(rec, sample, device, dtype)
        second, _, _ = build(rec, _other_values(sample), device, dtype)
        where = _tensor_positions(first)
        call = _with_tensors(rec, first, sample)

        compiled = ag.compile(call)
        with ag.no_grad():
            for args in (first, second, first):
                tensors = [args[i] for i in where]
                got = compiled(*tensors)
                want = call(*tensors)
                _assert_same(got, want, f"{rec.name} on {device} {dtype}")
        assert compiled.stats["captures"] + compiled.stats["eager"] >= 1


def _chain(x: ag.Tensor, y: ag.Tensor) -> ag.Tensor:
    for _ in range(5):
        x = (x * y + 1.0).tanh() - y
    return x


def test_chain_is_captured_once_and_replayed(device: str) -> None:
    compiled = ag.compile(_chain)
    with ag.no_grad():
        for k in range(4):
            x, y = ag.full((3,), 0.1 * k, device=device), ag.full((3,), 0.5, device=device)
            _assert_same(compiled(x, y), _chain(x, y), "chain")
    assert compiled.stats == {"captures": 1, "replays": 3, "eager": 0}
    program = next(iter(compiled._cache.values())).forward
    # one kernel call per op, or one fused program where the device runs them
    fused = nd.get_device(device).kernels.ewise_program is not None
    assert len(program) == (1 if fused else 20)


def test_fused_chains_keep_what_is_read_after_them(device: str) -> None:
    """A value a fused chain computes is written out where something reads it later
    (a result, a reduction after the chain) and kept in a block temporary otherwise."""
    def f(x: ag.Tensor, y: ag.Tensor) -> tuple[ag.Tensor, ag.Tensor, ag.Tensor]:
        a = x * 2.0 + y
        b = (a.exp() - a).abs()
        total = b.sum()
        c = (b * y).sqrt() + 1.0
        return a, total, c.tanh() - c

    compiled = ag.compile(f)
    rng = np.random.default_rng(0)
    with ag.no_grad():
        for n in (5, 5, 5, 3000, 3000):
            x, y = (ag.tensor(rng.standard_normal(n), dtype="float32", device=device)
                    for _ in range(2))
            _assert_same(compiled(x, y), f(x, y), f"n={n}")
    assert compiled.stats == {"captures": 2, "replays": 3, "eager": 0}


def test_results_of_replays_do_not_alias(device: str) -> None:
    compiled = ag.compile(lambda x: x * 2.0)
    with ag.no_grad():
        compiled(ag.ones(2, device=device))
        a = compiled(ag.full((2,), 3.0, device=device))
        b = compiled(ag.full((2,), 5.0, device=device))
    assert a.tolist() == [6.0, 6.0] and b.tolist() == [10.0, 10.0]


def test_new_signature_captures_again_and_the_cache_is_bounded(device: str) -> None:
    compiled = ag.compile(lambda x: x.exp(), cache_size=2)
    with ag.no_grad():
        for n in (1, 2, 3, 1):
            x = ag.full((n,), 0.5, device=device)
            _assert_same(compiled(x), x.exp(), f"shape {n}")
    # shapes 1, 2, 3 captured; 1 was evicted by 3, so it is captured again
    assert compiled.stats["captures"] == 4 and len(compiled._cache) == 2
    with ag.no_grad():
        compiled(ag.ones(1, device=device))
    assert compiled.stats["replays"] == 1
    with pytest.raises(ValueError, match="cache_size must be an int >= 1"):
        ag.compile(_chain, cache_size=0)
    with pytest.raises(TypeError, match="expected a function or a callable"):
        ag.compile(3)  # type: ignore[arg-type]


def test_python_arguments_key_the_cache(device: str) -> None:
    compiled = ag.compile(lambda x, scale: x * scale)
    x = ag.ones(2, device=device)
    with ag.no_grad():
        assert compiled(x, 2.0).tolist() == [2.0, 2.0]
        assert compiled(x, 3.0).tolist() == [3.0, 3.0]
        assert compiled(x, 3.0).tolist() == [3.0, 3.0]
        assert compiled(x, np.array(0.5)).tolist() == [0.5, 0.5]  # unhashable: eager
    assert compiled.stats == {"captures": 2, "replays": 1, "eager": 1}


@pytest.mark.parametrize("body, reason", [
    (lambda x: x * x.sum().item(), "read to the host"),
    (lambda x: x + float(nd.generator().random()), "random numbers"),
    (lambda x: x if bool((x > 0).all()) else -x, "read to the host"),
])
def test_graph_breaks_run_eagerly(device: str, body: Any, reason: str,
                                  caplog: pytest.LogCaptureFixture) -> None:
    compiled = ag.compile(body)
    with ag.no_grad(), caplog.at_level(logging.WARNING, "lamina.autograd.compile"):
        ag.manual_seed(0)
        first = compiled(ag.ones(4, device=device))
        ag.manual_seed(1)
        second = compiled(ag.full((4,), 2.0, device=device))
        ag.manual_seed(1)
        want = body(ag.full((4,), 2.0, device=device))
    _assert_same(second, want, "eager after a break")
    assert first.shape == (4,)
    assert compiled.stats == {"captures": 1, "replays": 0, "eager": 1}
    assert reason in compiled.graph_breaks[0]
    assert [r.message for r in caplog.records if "graph break" in r.message]
    strict = ag.compile(body, fullgraph=True)
    with ag.no_grad(), pytest.raises(ag.GraphBreak, match=reason):
        strict(ag.ones(4, device=device))


@pytest.mark.parametrize("body", [
    lambda x: ag.dropout(x * 2.0, 0.5),
    lambda x: x + ag.randn(*x.shape, device=x.device) * ag.rand(*x.shape, device=x.device),
    lambda x: ag.bernoulli(x.sigmoid()) + ag.normal(x, 1.0),
])
def test_random_draws_replay_as_eager(device: str, body: Any) -> None:
    """Sampling functions are replayed calls: each replay draws new numbers, the same
    ones eager code draws from the same seed."""
    compiled = ag.compile(body)
    with ag.no_grad():
        for seed in (0, 1, 1, 2):
            x = ag.full((64,), 0.5, device=device)
            ag.manual_seed(seed)
            got = compiled(x)
            after = nd.generator().random()
            ag.manual_seed(seed)
            want = body(x)
            _assert_same(got, want, f"seed {seed}")
            assert nd.generator().random() == after  # the generator moved on alike
    assert compiled.stats == {"captures": 1, "replays": 3, "eager": 0}


def test_a_kept_intermediate_breaks(device: str) -> None:
    kept: list[ag.Tensor] = []

    def f(x: ag.Tensor) -> ag.Tensor:
        kept.append(x * 3.0)
        return x + 1.0

    compiled = ag.compile(f)
    with ag.no_grad():
        compiled(ag.ones(2, device=device))
        compiled(ag.ones(2, device=device))
    assert len(kept) == 2  # both calls ran the Python: nothing was replayed
    assert "kept outside" in compiled.graph_breaks[0]


def test_returning_an_existing_tensor_breaks(device: str) -> None:
    w = ag.ones(2, device=device)
    compiled = ag.compile(lambda x: (x + 1.0, w))
    with ag.no_grad():
        _, got = compiled(ag.ones(2, device=device))
        _, again = compiled(ag.ones(2, device=device))
    assert got is w and again is w
    assert "existed before the call" in compiled.graph_breaks[0]


def test_gradients_replay_as_eager(device: str) -> None:
    w = ag.tensor([[1.0, -2.0], [0.5, 3.0]], device=device, requires_grad=True)
    b = ag.tensor([0.1, -0.2], device=device, requires_grad=True)

    def f(x: ag.Tensor) -> ag.Tensor:
        return ((x @ w + b).relu() * x).sum()

    compiled = ag.compile(f)
    for value in (1.0, -1.0, 2.0):
        x = ag.full((3, 2), value, device=device, requires_grad=True)
        got = compiled(x)
        got.backward()
        mine = [t.grad.numpy().copy() for t in (x, w, b)]
        w.grad = b.grad = None
        x2 = ag.full((3, 2), value, device=device, requires_grad=True)
        want = f(x2)
        want.backward()
        assert got.item() == want.item()
        for g, e in zip(mine, (x2.grad, w.grad, b.grad)):
            np.testing.assert_array_equal(g, e.numpy())
        w.grad = b.grad = None
    assert compiled.stats == {"captures": 1, "replays": 2, "eager": 0}
    assert got.grad_fn.name() == "CompiledBackward"


def test_a_replayed_graph_checks_in_place_changes(device: str) -> None:
    w = ag.ones(2, device=device, requires_grad=True)
    compiled = ag.compile(lambda x: (x * w).sum())
    x = ag.ones(2, device=device)
    compiled(x)
    out = compiled(x)
    with ag.no_grad():
        w.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_two_results_that_require_grad_run_eagerly(device: str) -> None:
    w = ag.ones(3, device=device, requires_grad=True)
    compiled = ag.compile(lambda x: (x * w, x + w))
    for _ in range(2):
        a, b = compiled(ag.ones(3, device=device))
        (a.sum() + b.sum()).backward()
    assert w.grad.tolist() == [4.0, 4.0, 4.0]
    assert "2 results require grad" in compiled.graph_breaks[0]


def test_weights_are_read_where_they_lie(device: str) -> None:
    w = ag.full((2,), 2.0, device=device)
    compiled = ag.compile(lambda x: x * w)
    x = ag.ones(2, device=device)
    with ag.no_grad():
        assert compiled(x).tolist() == [2.0, 2.0]
        w.mul_(5.0)  # in place: the replay reads the new values
        assert compiled(x).tolist() == [10.0, 10.0]
        w.data = ag.full((2,), 7.0, device=device)  # new storage: captured again
        assert compiled(x).tolist() == [7.0, 7.0]
    assert compiled.stats == {"captures": 2, "replays": 1, "eager": 0}


def test_in_place_writes_and_views_of_arguments(device: str) -> None:
    def f(x: ag.Tensor) -> tuple[ag.Tensor, ag.Tensor]:
        x.add_(1.0)
        return x, x[1:]

    compiled = ag.compile(f)
    with ag.no_grad():
        compiled(ag.zeros(3, device=device))
        x = ag.tensor([1.0, 2.0, 3.0], device=device)
        same, tail = compiled(x)
    assert same is x and x.tolist() == [2.0, 3.0, 4.0]
    tail.mul_(10.0)  # a view of x: writes x
    assert x.tolist() == [2.0, 30.0, 40.0] and x._version == tail._version
    assert compiled.stats["replays"] == 1


def test_structured_results_and_decorator_forms(device: str) -> None:
    @ag.compile(fullgraph=True)
    def f(x: ag.Tensor) -> dict[str, Any]:
        values, indices = x.amax(0), x.argmax(0)  # max(dim) sorts on the host: a break
        return {"max": values, "pair": (values, indices), "n": x.shape[0],
                "named": ag.ValuesIndices(values, indices)}

    with ag.no_grad():
        f(ag.tensor([1.0, 3.0, 2.0], device=device))
        out = f(ag.tensor([5.0, 3.0, 4.0], device=device))
    assert out["max"].item() == 5.0 and out["pair"][1].item() == 0 and out["n"] == 3
    assert type(out["pair"]) is tuple and out["named"].indices.item() == 0
    assert f.stats["replays"] == 1 and f.__name__ == "f"


def test_a_compiled_module_keeps_its_attributes(device: str) -> None:
    class Affine:
        def __init__(self) -> None:
            self.weight = ag.full((2,), 3.0, device=device)

        def __call__(self, x: ag.Tensor) -> ag.Tensor:
            return x * self.weight + 1.0

    model = ag.compile(Affine())
    with ag.no_grad():
        model(ag.ones(2, device=device))
        assert model(ag.full((2,), 2.0, device=device)).tolist() == [7.0, 7.0]
    assert model.weight.tolist() == [3.0, 3.0]
    assert "Affine" in repr(model)


def test_profiling_runs_eagerly(device: str) -> None:
    compiled = ag.compile(lambda x: x * 2.0)
    with ag.no_grad(), ag.profiler.profile() as prof:
        compiled(ag.ones(2, device=device))
    assert [e.name for e in prof.events()] == ["mul_scalar"]
    assert compiled.stats == {"captures": 0, "replays": 0, "eager": 1}


def test_training_flags_of_closed_over_modules_key_the_cache(device: str) -> None:
    class Scale:
        """A module-like object: eval mode doubles, training mode triples."""

        def __init__(self) -> None:
            self.training = True

        def modules(self) -> list[Scale]:
            return [self]

        def __call__(self, x: ag.Tensor) -> ag.Tensor:
            return x * (3.0 if self.training else 2.0)

    module = Scale()
    by_module = ag.compile(module)
    by_closure = ag.compile(lambda x: module(x) + 1.0)
    with ag.no_grad():
        for training, factor in ((True, 3.0), (False, 2.0), (True, 3.0), (False, 2.0)):
            module.training = training
            x = ag.ones(2, device=device)
            assert by_module(x).tolist() == [factor] * 2
            assert by_closure(x).tolist() == [factor + 1.0] * 2
    assert by_module.stats == by_closure.stats == {"captures": 2, "replays": 2, "eager": 0}
