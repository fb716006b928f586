"""docs/settings.md, generated from the settings model so that it cannot drift (`make docs` writes it;
tests/ui/test_settings_doc.py fails when it is stale)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal, get_args, get_origin

import annotated_types
from pydantic.fields import FieldInfo

from engines.settings import DATA_DIR, Settings

HEADER = """# Settings

Every setting of ragrouter, read from an environment variable `RAGROUTER_<NAME>` (or a `.env` file in the working
folder). Generated from `engines/settings.py` by `make docs`; do not edit by hand.

| setting | default | range | effect |
|---|---|---|---|
"""


def _choices(annotation: object) -> list[str]:
    """The values a Literal (or a list of Literals) allows."""
    if get_origin(annotation) is Literal:
        return [str(a) for a in get_args(annotation)]
    if get_origin(annotation) is list:
        return _choices(get_args(annotation)[0])
    return []


def _range_of_choices(field: FieldInfo) -> str:
    return " \\| ".join(f"`{c}`" for c in _choices(field.annotation))


def _range(field: FieldInfo) -> str:
    if _choices(field.annotation) and get_origin(field.annotation) is Literal:
        return _range_of_choices(field)
    if field.annotation is bool:
        return "`true` \\| `false`"
    low = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
    if min_length := next((m.min_length for m in field.metadata if isinstance(m, annotated_types.MinLen)), None):
        return f"at least {min_length} of " + _range_of_choices(field)
    if low is not None and high is not None:
        return f"{low} … {high}"
    if low is not None:
        return f"≥ {low}"
    return "any"


def _default(value: object) -> str:
    if value is None or value == "":
        return "(none)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    # Paths as a user reads them in their own checkout and home folder, not this machine's.
    text = str(value).replace(str(DATA_DIR.parent) + "/", "").replace(str(Path.home()), "~")
    return f"`{text}`"


def settings_markdown() -> str:
    rows = [
        f"| `RAGROUTER_{name.upper()}` | {_default(field.default)} | {_range(field)} | {field.description or ''} |"
        for name, field in Settings.model_fields.items()
    ]
    return HEADER + "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.stdout.write(settings_markdown())
