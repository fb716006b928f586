"""A question's scope: the years and the numbered things it names. A passage about other years (engines/documents/scope/years.py)
or other numbered things of the same kind (engines/documents/scope/numbers.py) is set aside before anything reads it: on the
plain path by this node postprocessor, before rerank and compression; in CRAG before grading, its rewrites'
retrievals included."""

from __future__ import annotations

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from engines.documents.scope.numbers import other_numbers
from engines.documents.scope.years import other_years
from engines.tracing.recorder import note


def out_of_scope(question: str, passage: str, years: bool = True, numbers: bool = True) -> set[str]:
    """What the passage names instead of what the question asks about (other years, other numbered things); empty
    when it is in scope."""
    return (other_years(question, passage) if years else set()) | (other_numbers(question, passage) if numbers else set())


class ScopeFilter(BaseNodePostprocessor):
    """Sets aside the passages outside the question's scope, and says so in the trace's notes."""

    years: bool = True
    numbers: bool = True

    @classmethod
    def class_name(cls) -> str:
        return "ScopeFilter"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        question = query_bundle.query_str if query_bundle else ""
        kept, named = [], set()
        for node in nodes:
            others = out_of_scope(question, node.node.get_content(), self.years, self.numbers)
            named |= others
            if not others:
                kept.append(node)
        if len(kept) < len(nodes):
            note(
                f"{len(nodes) - len(kept)} of {len(nodes)} passages set aside: they name {', '.join(sorted(named))}, not what the question asks about."
            )
        return kept
