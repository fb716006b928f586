"""Per-question results on disk, so a long run can be stopped and resumed where it left off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=True, soft_wrap=True)


class RunLog:
    """JSON lines `{system, key, ...}` in OUT/items.jsonl; an item already there is not run again."""

    def __init__(self, out: Path) -> None:
        self.path = out / "items.jsonl"
        out.mkdir(parents=True, exist_ok=True)
        self._done: dict[tuple[str, str], dict] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                self._done[(record["system"], record["key"])] = record

    def run(self, system: str, items: Iterable[tuple[str, dict]], measure: Callable[[dict], dict]) -> list[dict]:
        """`measure` each (key, item) not yet logged for `system`; return all of the system's records in order."""
        items = list(items)
        todo = [(k, item) for k, item in items if (system, k) not in self._done]
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
        with Progress(*columns, console=console, transient=True) as progress, self.path.open("a", encoding="utf-8") as log:
            task = progress.add_task(system, total=len(items), completed=len(items) - len(todo))
            for key, item in todo:
                record = {"system": system, "key": key, **measure(item)}
                log.write(json.dumps(record, ensure_ascii=False) + "\n")
                log.flush()
                self._done[(system, key)] = record
                progress.advance(task)
        return [self._done[(system, k)] for k, _ in items]
