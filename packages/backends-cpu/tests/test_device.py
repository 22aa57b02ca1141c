"""The cpu device through lamina.ndarray: its name and its settings API."""

from __future__ import annotations

import pytest
from conftest import cpu

nd = pytest.importorskip("lamina.ndarray")


def test_single_device_shows_as_cpu() -> None:
    dev = nd.get_device("cpu")
    assert dev.name == "cpu" and str(dev) == "cpu" and repr(dev) == "device('cpu')"
    assert nd.get_device("cpu:0") is dev and dev.index == 0
    assert nd.array([1.0], device="cpu").device.name == "cpu"
    with pytest.raises(nd.DeviceError, match="'cpu:1' is out of range: backend 'cpu' .* has a "
                       "single device; use 'cpu'"):
        nd.get_device("cpu:1")


def test_thread_settings() -> None:
    dev = nd.get_device("cpu")
    before = dev.num_threads()
    assert before == cpu.num_threads() >= 1
    try:
        dev.set_num_threads(1)
        assert dev.num_threads() == 1 == cpu.num_threads()
    finally:
        dev.set_num_threads(before)
    assert dev.num_threads() == before
    for bad in (0, -2):
        with pytest.raises(ValueError, match=f"^set_num_threads: expected an int >= 1, got {bad}$"):
            dev.set_num_threads(bad)
    for bad in (1.5, True, "2"):
        with pytest.raises(TypeError, match="^set_num_threads: expected an int >= 1, got "):
            dev.set_num_threads(bad)  # type: ignore[arg-type]
    assert dev.num_threads() == before


def test_memory_stats_and_empty_cache() -> None:
    dev = nd.get_device("cpu")
    a = nd.zeros(1 << 16, device=dev)
    stats = dev.memory_stats()
    assert stats == cpu.memory_stats() and stats["in_use_bytes"] >= a.size * 4
    del a
    dev.empty_cache()
    assert dev.memory_stats()["cached_bytes"] == 0
    dev.synchronize()


def test_numpy_device_says_what_it_lacks() -> None:
    dev = nd.get_device("numpy")
    for call in (dev.num_threads, dev.memory_stats, dev.empty_cache,
                 lambda: dev.set_num_threads(1)):
        with pytest.raises(nd.DeviceError, match="^device 'numpy' has no .*: its backend "
                           r"\(lamina-ndarray 0.1.0\) does not provide the optional \w+\(\)$"):
            call()
    dev.synchronize()  # a no-op where kernels are synchronous
