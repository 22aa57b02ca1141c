"""Shared fixtures: every test that takes ``device`` runs on each available backend."""

import pytest
from lamina.ndarray import list_backends


def available_devices() -> list[str]:
    return [b.name for b in list_backends() if b.status == "available"]


@pytest.fixture(params=available_devices())
def device(request: pytest.FixtureRequest) -> str:
    return str(request.param)
