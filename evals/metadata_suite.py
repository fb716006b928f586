"""The metadata suite: sort, superlative, count and filter questions over ../shared/eval/peps's metadata, with gold
answers computed from the corpus's own fields by `gold` below (plain Python, none of the path's code). Ours (the
model's instruction, Milvus filters, the sort in code) beside plain hybrid retrieval and LlamaIndex's
VectorIndexAutoRetriever on the same questions and the same collection.

A question's `where` is a list of [field, op, value]: "contains" finds a name in a list (authors) or a part of a
comma-separated text (topic), versions compare as numbers (3.10 after 3.9), dates as ISO text."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.retrievers import VectorIndexAutoRetriever
from llama_index.core.vector_stores.types import MetadataInfo, VectorStoreInfo

from engines.documents.metadata.engine import MetadataQueryEngine
from engines.documents.metadata.fields import version_key
from engines.routing.router import RagRouter
from engines.tracing.recorder import recording
from evals.datasets import EvalDataError
from evals.report import Report
from evals.runlog import RunLog
from tools.build import built

SOURCE = "peps"
PLAIN_TOP_K = 20
META_TYPES = {"int": "int", "float": "float"}  # VectorStoreInfo knows str, int and float; dates and versions are str


def _value(record: dict[str, Any], field: str) -> Any:
    value = record.get(field)
    return version_key(value) if field == "python_version" and value else value


def _holds(record: dict[str, Any], field: str, op: str, value: Any) -> bool:
    stored = record.get(field)
    if stored is None:
        return False
    if op == "contains":
        items = stored if isinstance(stored, list) else [p.strip() for p in str(stored).split(",")]
        return value in items
    if field == "python_version":
        stored, value = version_key(stored), version_key(value)
    return {"==": stored == value, "!=": stored != value, ">": stored > value, ">=": stored >= value, "<": stored < value, "<=": stored <= value}[op]


def gold(item: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """Every matching document, and for a sort the documents that may stand in the first k (ties included)."""
    matches = [r for r in records if all(_holds(r, *condition) for condition in item["where"])]
    if not item["sort"]:
        return {"matches": len(matches), "ids": sorted(r["id"] for r in matches), "acceptable": sorted(r["id"] for r in matches)}
    ranked = sorted((r for r in matches if r.get(item["sort"]) is not None), key=lambda r: _value(r, item["sort"]), reverse=item["order"] == "desc")
    top = ranked[: item["k"]]
    if not top:
        return {"matches": 0, "ids": [], "acceptable": []}
    edge = _value(top[-1], item["sort"])
    better = (lambda v: v >= edge) if item["order"] == "desc" else (lambda v: v <= edge)
    return {"matches": len(matches), "ids": [r["id"] for r in top], "acceptable": sorted(r["id"] for r in ranked if better(_value(r, item["sort"])))}


def correct(item: dict[str, Any], truth: dict[str, Any], ids: list[str] | None, count: int | None) -> bool:
    """A count must be the number; a sort's first k must be k (or all) of the acceptable; a filter's documents
    must be exactly the matches (up to 20); "none" must find nothing."""
    if item["count"]:
        return count == truth["matches"]
    if ids is None:
        return False
    if not item["sort"]:
        return sorted(ids) == truth["ids"][:20] if truth["matches"] <= 20 else len(ids) == 20 and set(ids) <= set(truth["ids"])
    return len(ids) == len(truth["ids"]) and set(ids) <= set(truth["acceptable"])


def _unique_docs(nodes: list[Any], k: int) -> list[str]:
    seen: list[str] = []
    for node in nodes:
        doc = node.node.metadata.get("doc_id")
        if doc and doc not in seen:
            seen.append(doc)
    return seen[:k]


class Systems:
    """The three ways of answering, each returning (document ids or None, a count or None, ms, note)."""

    def __init__(self, router: RagRouter) -> None:
        tool = built(router, SOURCE)
        if not isinstance(tool.tool.query_engine, MetadataQueryEngine):
            raise EvalDataError(f"source '{SOURCE}' declares no metadata_fields: the metadata suite needs them")
        self.engine: MetadataQueryEngine = tool.tool.query_engine
        self.index, self.llm = tool.index, router.llm
        info = VectorStoreInfo(
            content_info=tool.source.description or "Python Enhancement Proposals",
            metadata_info=[
                MetadataInfo(name=f.name, type=META_TYPES.get(f.type, "str"), description=f.description or f"{f.type} field")
                for f in self.engine.catalog.fields
            ],
        )
        self.auto = VectorIndexAutoRetriever(self.index, vector_store_info=info, llm=self.llm, similarity_top_k=PLAIN_TOP_K, max_top_k=PLAIN_TOP_K)
        self.plain = self.index.as_retriever(similarity_top_k=PLAIN_TOP_K, vector_store_query_mode="hybrid")

    def measure(self, item: dict[str, Any]) -> dict[str, Any]:
        k = item["k"] or 20
        start = time.perf_counter()
        plain_ids = _unique_docs(self.plain.retrieve(item["question"]), k)
        plain_ms = (time.perf_counter() - start) * 1000
        with recording() as clock:
            start = time.perf_counter()
            found = self.engine.find(item["question"])
            ours_ms = (time.perf_counter() - start) * 1000
        if found is None:
            ours = {"ids": plain_ids, "count": None, "instruction": None}
        else:
            instruction, lookup = found
            ids = [d["doc_id"] for d in lookup.documents[: instruction.listed()]]
            ours = {"ids": ids, "count": len(lookup.documents) if instruction.count else None, "instruction": instruction.model_dump()}
        start = time.perf_counter()
        try:
            auto_ids, auto_error = _unique_docs(self.auto.retrieve(item["question"]), k), None
        except Exception as err:  # the stock retriever raises on a reply it cannot parse or a filter Milvus refuses
            auto_ids, auto_error = [], f"{type(err).__name__}: {str(err)[:200]}"
        auto_ms = (time.perf_counter() - start) * 1000
        return {
            "ours": {**ours, "ms": round(ours_ms, 1), "notes": clock.notes, "llm_calls": clock.llm_calls},
            "plain": {"ids": plain_ids, "count": None, "ms": round(plain_ms, 1)},
            "auto": {"ids": auto_ids, "count": None, "ms": round(auto_ms, 1), "error": auto_error},
        }


def _load_corpus(router: RagRouter) -> list[dict[str, Any]]:
    path = Path(router.tool(SOURCE).source.path)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_metadata_suite(router: RagRouter, items: list[dict], report: Report, log: RunLog) -> None:
    systems = Systems(router)
    records = _load_corpus(router)
    keyed = [(f"{i}:{q['question']}", q) for i, q in enumerate(items)]
    results = log.run("systems", keyed, systems.measure)
    truths = [gold(q, records) for q in items]
    kinds = [("none" if t["matches"] == 0 else q["kind"]) for q, t in zip(items, truths)]
    scores = {
        name: [correct(q, t, r[name]["ids"], r[name]["count"]) for q, t, r in zip(items, truths, results)] for name in ("ours", "plain", "auto")
    }
    accuracy = {name: round(float(np.mean(s)), 3) for name, s in scores.items()}
    ms = {name: round(float(np.median([r[name]["ms"] for r in results])), 1) for name in ("ours", "plain", "auto")}
    report.headline(
        {"accuracy": accuracy["ours"], "median_ms": ms["ours"]},
        {"accuracy": accuracy["auto"], "median_ms": ms["auto"]},
        "stock VectorIndexAutoRetriever",
    )
    by_kind = {
        kind: {name: round(float(np.mean([s for s, kk in zip(scores[name], kinds) if kk == kind])), 3) for name in scores} | {"n": kinds.count(kind)}
        for kind in sorted(set(kinds))
    }
    by_lang = {
        lang: {name: round(float(np.mean([s for s, q in zip(scores[name], items) if q["lang"] == lang])), 3) for name in scores}
        for lang in sorted({q["lang"] for q in items})
    }
    fallbacks = Counter("applied" if r["ours"]["instruction"] else ("not asked" if not r["ours"]["notes"] else "fell back") for r in results)
    report.detail("accuracy", accuracy)
    report.detail("median_ms", ms)
    report.detail("by_kind", by_kind)
    report.detail("by_language", by_lang)
    report.detail("ours_paths", dict(fallbacks))
    report.detail("auto_errors", sum(1 for r in results if r["auto"]["error"]))
    rows = ["| kind | n | ours | plain hybrid retrieval | VectorIndexAutoRetriever |", "|---|---|---|---|---|"]
    rows += [f"| {k} | {v['n']} | {v['ours']:.3f} | {v['plain']:.3f} | {v['auto']:.3f} |" for k, v in by_kind.items()]
    rows.append(f"| all | {len(items)} | {accuracy['ours']:.3f} | {accuracy['plain']:.3f} | {accuracy['auto']:.3f} |")
    report.section(
        "## Accuracy by kind of question\n\n" + "\n".join(rows) + f"\n\nBy language: {by_lang}. Median ms: {ms}. "
        f"Ours: {dict(fallbacks)} (fell back: the instruction could not be applied, and retrieval answered). "
        f"The stock auto-retriever raised on {report.data['details']['auto_errors']} questions. Plain retrieval and the "
        "auto-retriever cannot count: their count questions are wrong by construction."
    )
