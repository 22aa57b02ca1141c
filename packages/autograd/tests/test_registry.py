"""Every op is declared once, has a gradient rule or is non-differentiable, and a record."""

from __future__ import annotations

import lamina.autograd as ag
from lamina.autograd._function import Function
from lamina.autograd._ops import COMPOSITES, PRIMITIVES
from op_records import RECORDS

_COVERED = {rec.name for rec in RECORDS} | {n for rec in RECORDS for n in rec.covers}


def test_every_primitive_has_a_rule_or_is_declared_non_differentiable() -> None:
    for name, op in PRIMITIVES.items():
        assert op.name == name
        has_rule = op.backward is not Function.backward
        assert has_rule == op.differentiable, f"{name}: differentiable={op.differentiable}"


def test_every_op_has_a_test_record() -> None:
    missing = sorted((set(PRIMITIVES) | set(COMPOSITES)) - _COVERED)
    assert not missing, f"ops without a test record: {missing}"


def test_every_record_names_a_registered_op() -> None:
    unknown = sorted(_COVERED - set(PRIMITIVES) - set(COMPOSITES))
    assert not unknown, f"records for unknown ops: {unknown}"


def test_primitive_and_composite_names_do_not_collide() -> None:
    assert not set(PRIMITIVES) & set(COMPOSITES)


def test_public_namespace_is_explicit() -> None:
    assert len(ag.__all__) == len(set(ag.__all__))
    for name in ag.__all__:
        assert hasattr(ag, name), name
