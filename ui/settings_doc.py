"""docs/settings.md, generated from the settings model so that it cannot drift (`make docs` writes it;
tests/ui/test_settings_doc.py fails when it is stale)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types
from pydantic.fields import FieldInfo

from engines.settings import DATA_DIR, Settings

HEADER = """# Settings

Every setting of ragrouter, read from an environment variable `RAGROUTER_<NAME>` (or a `.env` file in the working
folder). Generated from `engines/settings.py` by `make docs`; do not edit by hand.

| setting | default | range | effect |
|---|---|---|---|
"""


def _choices(annotation: object) -> str:
    """The values a Literal (or a list of Literals) allows, as the table shows them."""
    if get_origin(annotation) is list:
        return _choices(get_args(annotation)[0])
    return " \\| ".join(f"`{a}`" for a in get_args(annotation))


def _bound(field: FieldInfo, kind: type) -> Any:
    return next((m for m in field.metadata if isinstance(m, kind)), None)


def _range(field: FieldInfo) -> str:
    if get_origin(field.annotation) is Literal:
        return _choices(field.annotation)
    if field.annotation is bool:
        return "`true` \\| `false`"
    if shortest := _bound(field, annotated_types.MinLen):
        return f"at least {shortest.min_length} of {_choices(field.annotation)}"
    low, high = _bound(field, annotated_types.Ge), _bound(field, annotated_types.Le)
    if low and high:
        return f"{low.ge} … {high.le}"
    return f"≥ {low.ge}" if low else "any"


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
