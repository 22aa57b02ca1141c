"""lamina.autograd.profiler: events, nesting, self times, tables and traces."""

from __future__ import annotations

import json
import threading

import lamina.autograd as ag
import numpy as np
import pytest
from conftest import DEVICES
from lamina.autograd import _function
from lamina.autograd.profiler import EventList, profile, record_function


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


def _step(device: str) -> tuple[ag.Tensor, ag.Tensor]:
    w = ag.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    x = ag.tensor([[0.5, -1.0]], device=device)
    loss = (x @ w).relu().sum()
    loss.backward()
    return w, loss


def test_forward_and_backward_events_nest(device: str) -> None:
    with profile() as prof:
        _step(device)
    events = prof.events()
    top = [e.name for e in events if e.depth == 0]
    assert top == ["matmul", "relu", "sum", "SumBackward", "ReluBackward", "MatmulBackward"]
    kinds = {e.name: e.kind for e in events}
    assert kinds["matmul"] == "forward" and kinds["MatmulBackward"] == "backward"
    # the ops a backward rule runs are its children, one level down
    children = [e for e in events if e.depth == 1]
    assert children and all(c.kind == "forward" for c in children)
    for parent in (e for e in events if e.depth == 0):
        inside = [c for c in children if parent.start_ns <= c.start_ns
                  and c.end_ns <= parent.end_ns]
        assert parent.self_ns == pytest.approx(
            parent.end_ns - parent.start_ns - sum(c.end_ns - c.start_ns for c in inside))
        assert 0 <= parent.self_ns <= parent.end_ns - parent.start_ns


def test_profiling_changes_no_result(device: str) -> None:
    w_plain, loss_plain = _step(device)
    with profile(record_shapes=True, synchronize=True):
        w_prof, loss_prof = _step(device)
    assert loss_prof.item() == loss_plain.item()
    np.testing.assert_array_equal(w_prof.grad.numpy(), w_plain.grad.numpy())


def test_observer_is_removed_on_exit_and_on_error(device: str) -> None:
    with profile():
        assert _function.observer is not None
    assert _function.observer is None
    with pytest.raises(ZeroDivisionError), profile():
        raise ZeroDivisionError
    assert _function.observer is None
    with profile() as prof:
        pass
    _step(device)  # after the block: not recorded
    assert prof.events() == []


def test_profiles_do_not_nest() -> None:
    with profile(), pytest.raises(RuntimeError, match="another profiler"), profile():
        pass
    assert _function.observer is None


def test_disabled_profile_records_nothing(device: str) -> None:
    with profile(enabled=False) as prof:
        assert _function.observer is None
        _step(device)
    assert prof.events() == []


def test_key_averages_count_and_sum(device: str) -> None:
    x = ag.ones(4, device=device)
    with profile() as prof:
        for _ in range(3):
            x = x * 2.0
    (avg,) = prof.key_averages()
    assert (avg.key, avg.count) == ("mul_scalar", 3)
    events = prof.events()
    assert avg.cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in events))
    assert avg.cpu_time == pytest.approx(avg.cpu_time_total / 3)
    assert prof.key_averages().total_average().count == 3


def test_group_by_input_shape(device: str) -> None:
    with profile(record_shapes=True) as prof:
        ag.ones(2, device=device) * 2.0
        ag.ones(3, device=device) * 2.0
        ag.ones(3, device=device) * 2.0
    plain = prof.key_averages()
    grouped = prof.key_averages(group_by_input_shape=True)
    assert [(a.key, a.count) for a in plain] == [("mul_scalar", 3)]
    assert [(a.input_shapes, a.count) for a in grouped] == [(((2,),), 1), (((3,),), 2)]


def test_table_sorts_and_limits(device: str) -> None:
    with profile() as prof:
        _step(device)
    text = prof.key_averages().table(sort_by="count", row_limit=2)
    lines = text.splitlines()
    assert "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    assert len(lines) == 2 + 3 + 2  # rules and header, two rows, rule and total
    assert lines[-1].startswith("Self CPU time total:")
    counts = [int(line.split()[-1]) for line in lines[3:5]]
    assert counts == sorted(counts, reverse=True)
    with pytest.raises(ValueError, match="cannot sort by 'speed'"):
        prof.key_averages().table(sort_by="speed")
    assert isinstance(prof.key_averages(), EventList)


def test_record_function_ranges(device: str) -> None:
    @record_function("twice")
    def twice(x: ag.Tensor, depth: int) -> ag.Tensor:
        return twice(x * 2.0, depth - 1) if depth else x

    with profile() as prof:
        with record_function("outer"):
            twice(ag.ones(2, device=device), 2)
    got = [(e.name, e.depth) for e in prof.events()]
    assert got == [("outer", 0), ("twice", 1), ("mul_scalar", 2), ("twice", 2),
                   ("mul_scalar", 3), ("twice", 3)]
    assert all(e.kind == "user" for e in prof.events() if e.name != "mul_scalar")
    with record_function("no profiler"):  # nothing to record into: no error
        ag.ones(1, device=device) * 2.0
    with pytest.raises(TypeError, match="record_function: name must be a str"):
        record_function(3)  # type: ignore[arg-type]


def test_events_of_other_threads(device: str) -> None:
    seen: list[int] = []

    def work() -> None:
        seen.append(threading.get_ident())
        ag.ones(2, device=device) * 3.0

    with profile() as prof:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        ag.ones(2, device=device) * 2.0
    threads = {e.thread for e in prof.events()}
    assert threads == {seen[0], threading.get_ident()}
    assert all(e.depth == 0 for e in prof.events())


def test_chrome_trace(device: str, tmp_path: object) -> None:
    with profile(record_shapes=True) as prof:
        _step(device)
    path = tmp_path / "trace.json"  # type: ignore[operator]
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())["traceEvents"]
    assert [t["name"] for t in trace] == [e.name for e in prof.events()]
    assert all(t["ph"] == "X" and t["dur"] >= 0 and t["ts"] >= 0 for t in trace)
    assert trace[0]["args"]["Input Shapes"] == [[1, 2], [2, 2]]
