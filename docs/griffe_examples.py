"""A griffe extension: read ``Example:`` as an examples section, like Napoleon.

Lamina's docstrings write ``Example:`` before their doctests. Griffe's Google
parser only knows ``Examples:`` and would render the doctest lines as prose;
this renames the heading before the docstring is parsed.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_HEADING = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _HEADING.sub(r"\1Examples:", obj.docstring.value)
