"""A small PEP-like collection for the metadata tests: real Milvus Lite, the real embedding model, records shaped
as ../shared/eval/peps's (made up here: tests do not read the evaluation data)."""

from __future__ import annotations

import json
from pathlib import Path

RECORDS = [
    {
        "id": "pep-0008",
        "number": 8,
        "title": "Style Guide for Python Code",
        "status": "Active",
        "type": "Process",
        "topic": None,
        "created": "2001-07-05",
        "python_version": None,
        "words": 7000,
        "authors": ["Guido van Rossum", "Barry Warsaw"],
    },
    {
        "id": "pep-0020",
        "number": 20,
        "title": "The Zen of Python",
        "status": "Active",
        "type": "Informational",
        "topic": None,
        "created": "2004-08-19",
        "python_version": None,
        "words": 300,
        "authors": ["Tim Peters"],
    },
    {
        "id": "pep-0484",
        "number": 484,
        "title": "Type Hints",
        "status": "Final",
        "type": "Standards Track",
        "topic": "Typing",
        "created": "2014-09-29",
        "python_version": "3.5",
        "words": 9000,
        "authors": ["Guido van Rossum", "Jukka Lehtosalo"],
    },
    {
        "id": "pep-0572",
        "number": 572,
        "title": "Assignment Expressions",
        "status": "Final",
        "type": "Standards Track",
        "topic": None,
        "created": "2018-02-28",
        "python_version": "3.8",
        "words": 6000,
        "authors": ["Chris Angelico", "Tim Peters", "Guido van Rossum"],
    },
    {
        "id": "pep-0604",
        "number": 604,
        "title": "Allow writing union types as X | Y",
        "status": "Final",
        "type": "Standards Track",
        "topic": "Typing",
        "created": "2019-08-28",
        "python_version": "3.10",
        "words": 2000,
        "authors": ["Philippe Prados"],
    },
    {
        "id": "pep-0619",
        "number": 619,
        "title": "Python 3.10 Release Schedule",
        "status": "Active",
        "type": "Informational",
        "topic": "Release",
        "created": "2020-05-25",
        "python_version": "3.10",
        "words": 500,
        "authors": ["Pablo Galindo Salgado"],
    },
    {
        "id": "pep-0703",
        "number": 703,
        "title": "Making the Global Interpreter Lock Optional",
        "status": "Accepted",
        "type": "Standards Track",
        "topic": None,
        "created": "2023-01-09",
        "python_version": "3.13",
        "words": 8000,
        "authors": ["Sam Gross"],
    },
    {
        "id": "pep-3000",
        "number": 3000,
        "title": "Python 3000",
        "status": "Final",
        "type": "Process",
        "topic": None,
        "created": "2006-04-05",
        "python_version": "3.0",
        "words": 1500,
        "authors": ["Guido van Rossum"],
    },
]
FIELDS = "[number, title, status, type, topic, created, python_version, words, authors]"


def write_peps(folder: Path) -> Path:
    """The corpus and a sources file declaring it as the issue's hidden test set does; returns the sources file."""
    corpus = folder / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({**r, "text": f"{r['title']}. This PEP describes {r['title'].lower()}."}) + "\n" for r in RECORDS), encoding="utf-8"
    )
    sources = folder / "sources.yaml"
    sources.write_text(
        "sources:\n  - name: peps\n    kind: documents\n    description: Python Enhancement Proposals.\n"
        f"    path: {corpus}\n    format: jsonl\n    id_field: id\n    text_fields: [title, text]\n    metadata_fields: {FIELDS}\n",
        encoding="utf-8",
    )
    return sources
