"""How well the cheap follow-up check (engines/conversation/standalone.py) tells follow-ups from questions that
stand alone, in English and Chinese, with no model: recall on follow-ups that need the turns before them, and the
share of single questions it marks (each of those costs a condense call inside a conversation).

`python -m evals.follow_up_detection --split dev` prints the table; `ragrouter eval chat` puts it in its report.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from engines.conversation.standalone import follow_up_mark
from evals.datasets import EVAL_DIR, QUESTIONS_DIR, _cast, _dialogues, _spider, read_jsonl


def _shipped(name: str, split: str) -> list[dict]:
    path = QUESTIONS_DIR / f"chat-{name}.{split}.jsonl"
    return read_jsonl(path) if path.is_file() else []


def detection_sets(split: str, eval_dir: Path = EVAL_DIR) -> dict[str, tuple[str, list[str]]]:
    """Each set's kind ("follow-up": should be marked; "single": should not) and its questions."""
    cast = [t for topic in _cast(eval_dir, split) for t in topic["turns"][1:]]
    sparc = [t["utterance"] for i in _dialogues(eval_dir, "sparc", split) for t in i["turns"][1:]]
    zh_docs = _shipped("zh-docs", split)
    zh_sql = _shipped("zh-sql", split)
    return {
        "en: CAsT follow-ups the people rewrote": ("follow-up", [t["raw"] for t in cast if t["manual"] != t["raw"]]),
        "en: SParC follow-ups": ("follow-up", sparc),
        "en: CAsT turns the people left as they were": ("single", [t["raw"] for t in cast if t["manual"] == t["raw"]]),
        "en: Spider questions": ("single", [q["question"] for q in _spider(eval_dir, split)]),
        "zh: CMRC2018 follow-ups": ("follow-up", [i["turns"][1]["utterance"] for i in zh_docs]),
        "zh: SParC/CoSQL follow-ups": ("follow-up", [t["utterance"] for i in zh_sql for t in i["turns"][1:]]),
        "zh: CMRC2018 first questions": ("single", [q["question"] for q in _shipped("zh-single", split) if q["from"] == "cmrc2018"]),
        "zh: Spider questions": ("single", [q["question"] for q in _shipped("zh-single", split) if q["from"] == "spider"]),
    }


def detection_rates(split: str, check: Callable[[str], str | None] = follow_up_mark) -> dict[str, dict]:
    """Per set: how many questions, and the share the check marks (recall for follow-ups, false positives for singles)."""
    rates = {}
    for name, (kind, questions) in detection_sets(split).items():
        if questions:
            marked = sum(check(q) is not None for q in questions)
            rates[name] = {"kind": kind, "questions": len(questions), "marked": round(marked / len(questions), 4)}
    return rates


def detection_table(rates: dict[str, dict]) -> str:
    rows = [
        f"| {name} | {r['questions']} | {'recall' if r['kind'] == 'follow-up' else 'false positives'} | {r['marked']:.1%} |"
        for name, r in rates.items()
    ]
    return "| set | questions | measure | marked |\n|---|---|---|---|\n" + "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--misses", help="print the questions of this set the check gets wrong")
    args = parser.parse_args()
    rates = detection_rates(args.split)
    print(detection_table(rates))
    if args.misses:
        kind, questions = detection_sets(args.split)[args.misses]
        wrong = [q for q in questions if (follow_up_mark(q) is None) == (kind == "follow-up")]
        print(json.dumps([(q, follow_up_mark(q)) for q in wrong], ensure_ascii=False, indent=0))


if __name__ == "__main__":
    main()
