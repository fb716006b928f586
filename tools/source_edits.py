"""Changes the app makes to the sources file: a new source, a new description.

The file is the user's: ruamel.yaml edits it in place, keeping comments, order and layout, and the edited file
replaces the old one only once it validates as a whole, so a change that would break it changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from pathlib import Path

from ruamel.yaml import YAML

from engines.sources import Source, SourcesError, load_sources


class SourceEditError(ValueError):
    """A change that cannot be made; the sources file is as it was."""


def _edit(sources_file: Path, change: Callable[[list], None], name: str) -> Source:
    yaml = YAML()  # round-trip mode: comments and key order survive
    yaml.indent(mapping=2, sequence=4, offset=2)  # the layout of data/sources.yaml: "  - name: x" / "    kind: y"
    yaml.width = 4096  # long descriptions stay on their lines
    document = yaml.load(sources_file.read_text(encoding="utf-8"))
    change(document["sources"])
    text = StringIO()
    yaml.dump(document, text)
    staged = sources_file.with_name(sources_file.name + ".new")
    staged.write_text(text.getvalue(), encoding="utf-8")
    try:
        changed = next(s for s in load_sources(staged) if s.name == name)
    except SourcesError as err:
        staged.unlink()
        raise SourceEditError(f"the change would make the sources file invalid: {err}") from err
    staged.replace(sources_file)
    return changed


def add_source(sources_file: Path, entry: dict) -> Source:
    """Append a source to the sources file's list."""
    return _edit(sources_file, lambda sources: sources.append(entry), entry["name"])


def set_description(sources_file: Path, name: str, description: str) -> Source:
    """Give the source `name` this description (an empty one: the generated description is used again)."""

    def change(sources: list) -> None:
        entry = next((s for s in sources if s.get("name") == name), None)
        if entry is None:
            raise SourceEditError(f"no source named '{name}' in {sources_file}")
        if description.strip():
            entry["description"] = description.strip()
        else:
            entry.pop("description", None)

    return _edit(sources_file, change, name)
