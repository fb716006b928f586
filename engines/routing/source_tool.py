"""What the router receives for each source: its QueryEngineTool (opaque: the router scores and picks, the tool
answers), the profile texts it routes by, the schema vocabulary of a database and the coverage probe. What the app
and evals need of a path besides (its database, SQL knowledge, index) is tools/build.py's BuiltSource."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from llama_index.core.tools import QueryEngineTool

from engines.matching.coverage_probe import Probe
from engines.matching.schema_terms import SchemaVocabulary
from engines.sources import Source


@dataclass
class SourceTool:
    source: Source
    tool: QueryEngineTool
    profile: list[str]
    vocabulary: SchemaVocabulary | None = None
    probe: Probe | None = None
    # What it holds in the other language (a database's tables by their aliases: `歌手（singer）：国家、年龄`).
    translated: list[str] = field(default_factory=list)

    def profile_with(self, description: str) -> list[str]:
        """The profile the router would read were `description` the source's own (its contents unchanged)."""
        contents = self.profile[1 + len(clauses(self.source.description)) :]
        return profile_texts(description, description, contents)


def profile_texts(description: str, given: str | None, contents: list[str]) -> list[str]:
    """A source's profile: the description it routes by, the user's own description clause by clause, then
    texts of what it holds (the layout `SourceTool.profile_with` relies on)."""
    return [description, *clauses(given), *contents]


# Where a description changes language or starts a new sentence: " / ", Chinese full stops and semicolons, ". ".
_CLAUSE_BREAK = re.compile(r"\s/\s|[。；]|(?<=\.)\s")


def clauses(description: str | None) -> list[str]:
    """A user's description split where it changes language or sentence, each part embedded on its own.

    A bilingual description embedded whole matches a Chinese question weakly (demo: "年龄大于30的客户有多少？"
    scored the shop 0.840 against the web's 0.853); its Chinese clause alone scores 0.873. Generated
    descriptions are one sentence per source and are not split.
    """
    text = description or ""
    # Only breaks outside brackets: "(quantity, order date / 订单、数量、下单日期)" is one clause, not two halves
    # (the half "订单、数量、下单日期)." scored 0.863 for "年假有多少天？" and took it from the handbook).
    cuts = [m for m in _CLAUSE_BREAK.finditer(text) if _bracket_depth(text[: m.start()]) == 0]
    starts = [0] + [m.end() for m in cuts]
    ends = [m.start() for m in cuts] + [len(text)]
    return [text[a:b].strip() for a, b in zip(starts, ends) if len(text[a:b].strip()) > 3]


def _bracket_depth(text: str) -> int:
    return sum(text.count(c) for c in "(（[") - sum(text.count(c) for c in ")）]")
