"""The passages an answer was written from, as the trace shows them, and the answer's citations named after them."""

from __future__ import annotations

import re
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.schema import NodeWithScore

from engines.answers.cited_names import name_citations
from engines.trace import RESULT, Passage, PassagesResult

CITATION_PREFIX = re.compile(r"^Source \d+:\n")


def passage(node: NodeWithScore) -> Passage:
    """A retrieved node as a passage; its source is left to the trace (the answering collection), except for a page
    the documents path fetched from the web (Corrective RAG's fallback), which is the web's."""
    meta = node.node.metadata
    ident = meta.get("file_name") or meta.get("doc_id") or meta.get("url") or node.node.ref_doc_id or node.node.node_id
    # CitationQueryEngine prefixes each chunk with "Source N:"; the passage's place in the list already says N.
    text = CITATION_PREFIX.sub("", node.node.get_content()).strip()
    return Passage(
        source="web" if meta.get("url") else "",
        id=str(ident),
        title=meta.get("title"),
        score=node.score,
        text=text,
        url=meta.get("url"),
        retrieved_rank=meta.get("retrieved_rank"),
        retrieved_chars=meta.get("retrieved_chars"),
        retrieved_text=meta.get("retrieved_text") if meta.get("retrieved_chars", 0) > len(text) else None,
    )


def with_passages(response: Response, **decided: Any) -> Response:
    """`response` handing back its passages (and what the path decided: `crag`, `metadata_query`, `web_error`,
    `declined`) as a PassagesResult, its citations named after the passages they point to."""
    passages = [passage(n) for n in response.source_nodes]
    response.response = name_citations(str(response.response or "").strip(), [p.title or p.id for p in passages])
    response.metadata = {**(response.metadata or {}), RESULT: PassagesResult(passages=passages, **decided)}
    return response
