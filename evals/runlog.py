"""Per-question results on disk, so a long run can be stopped and resumed where it left off."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from rich import progress as bars
from rich.console import Console

console = Console(stderr=True, soft_wrap=True)


Progress = Callable[[str, int, int], None]  # (system, questions done, questions in all): the app's progress bar


class RunLog:
    """JSON lines `{system, key, ...}` in OUT/items.jsonl; an item already there is not run again."""

    def __init__(self, out: Path, on_progress: Progress = lambda system, done, total: None) -> None:
        self.path = out / "items.jsonl"
        self._on_progress = on_progress
        out.mkdir(parents=True, exist_ok=True)
        self._done: dict[tuple[str, str], dict] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                self._done[(record["system"], record["key"])] = record

    @property
    def records(self) -> dict[tuple[str, str], dict]:
        """Every logged record by (system, key)."""
        return dict(self._done)

    def run(self, system: str, items: Iterable[tuple[str, dict]], measure: Callable[[dict], dict]) -> list[dict]:
        """`measure` each (key, item) not yet logged for `system`; return all of the system's records in order."""
        items = list(items)
        todo = [(k, item) for k, item in items if (system, k) not in self._done]
        columns = (
            bars.TextColumn("{task.description}"),
            bars.BarColumn(),
            bars.MofNCompleteColumn(),
            bars.TimeElapsedColumn(),
            bars.TimeRemainingColumn(),
        )
        with bars.Progress(*columns, console=console, transient=True) as progress, self.path.open("a", encoding="utf-8") as log:
            task = progress.add_task(system, total=len(items), completed=len(items) - len(todo))
            for done, (key, item) in enumerate(todo, len(items) - len(todo) + 1):
                record = {"system": system, "key": key, **measure(item)}
                log.write(json.dumps(record, ensure_ascii=False) + "\n")
                log.flush()
                self._done[(system, key)] = record
                progress.advance(task)
                self._on_progress(system, done, len(items))
        return [self._done[(system, k)] for k, _ in items]
