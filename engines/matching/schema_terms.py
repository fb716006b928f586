"""Schema linking for the router: which SQL source's tables, columns and stored values a question names.

Embeddings alone confuse databases with overlapping subjects (Spider's `concert_singer` and `singer`, `pets_1`
and `dog_kennels`) and miss questions whose only clue is a stored value ("flights from Aberdeen"). Text-to-SQL
systems link questions to schemas by exact words and values (BRIDGE, RAT-SQL); these are the two signals here.
No library does this for a router, so it is written out: NLTK (a LlamaIndex dependency) stems and supplies the
stopwords, SQLAlchemy reads the schema and the values.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

from llama_index.core.utils import globals_helper
from nltk.stem import PorterStemmer
from sqlalchemy import Engine, MetaData, String, select

from engines.aliases import Aliases
from engines.language import has_chinese

MAX_VALUES_PER_COLUMN = 20_000
VALUE_CHARS = (3, 60)
MAX_GRAM = 4
_WORD = re.compile(r"[A-Za-z0-9][\w'&.-]*")
_STEMMER = PorterStemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stem(word)


def split_name(name: str) -> str:
    """`SurfaceArea` / `surface_area` -> `surface area`: schema names as the words a question would use."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name).replace("_", " ").lower()


def terms(text: str) -> set[str]:
    """Stemmed content words of English text (Chinese passes through unmatched: it has no schema words here)."""
    return {_stem(w) for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 1 and w not in globals_helper.stopwords}


def _value(text: str) -> str:
    return " ".join(text.split()).lower().strip(".'")


def _grams(question: str) -> list[tuple[int, list[str]]]:
    """Every run of 1-4 words of the question, with the place of its first word."""
    words = _WORD.findall(question)
    return [(start, words[start : start + n]) for start in range(len(words)) for n in range(1, MAX_GRAM + 1) if start + n <= len(words)]


def _phrases(grams: list[tuple[int, list[str]]]) -> set[str]:
    kept = {_value(" ".join(gram)) for _, gram in grams if not all(w.lower() in globals_helper.stopwords for w in gram)}
    return {p for p in kept if len(p) >= VALUE_CHARS[0] + 1}


def named_phrases(question: str) -> set[str]:
    """Phrases of 1-4 words that contain a capitalised word past the first: the names a question mentions."""
    return _phrases([(start, gram) for start, gram in _grams(question) if any(w[0].isupper() for i, w in enumerate(gram) if start + i > 0)])


def question_phrases(question: str) -> set[str]:
    """Every phrase of 1-4 words of the question that is not all stopwords, lower-cased as stored values are compared."""
    return _phrases(_grams(question))


# Words a request is made of ("list the other ids", "show their names", "sort by count") that some schemas also
# use as names (car_1's model_list): they say nothing about which database a follow-up means.
REQUEST_WORDS = frozenset(terms("list lists show display give find return tell count number total order sort id ids name names type code all each"))


@dataclass(frozen=True)
class SchemaVocabulary:
    """`alias_terms`: a table's or column's name in the other language (歌手) -> the stemmed words of its own name
    ({singer}); `value_aliases`: a stored value's name in the other language (法国) -> the value as compared (france)."""

    terms: frozenset[str]
    values: frozenset[str]
    alias_terms: dict[str, frozenset[str]] = field(default_factory=dict)
    value_aliases: dict[str, str] = field(default_factory=dict)
    table_aliases: frozenset[str] = frozenset()


# An alias shorter than this (one Chinese character: 年, 名) is part of too many words to say what a question names.
MIN_ALIAS_CHARS = 2


def _alias_vocabulary(aliases: Aliases) -> dict:
    words = {a: frozenset(terms(split_name(n.split(".")[-1]))) for n, a in aliases.names.items() if len(a) >= MIN_ALIAS_CHARS}
    values = {a: _value(v) for v, a in aliases.values.items() if len(a) >= MIN_ALIAS_CHARS}
    tables = frozenset(a for n, a in aliases.names.items() if "." not in n and len(a) >= MIN_ALIAS_CHARS)
    return {"alias_terms": {a: t for a, t in words.items() if t}, "value_aliases": values, "table_aliases": tables}


def schema_vocabulary(engine: Engine, aliases: Aliases | None = None) -> SchemaVocabulary:
    """Stemmed words of every table and column name, and the distinct short text values the database holds; with
    `aliases`, what their names in the other language stand for."""
    metadata = MetaData()
    metadata.reflect(engine)
    words: set[str] = set()
    values: set[str] = set()
    with engine.connect() as conn:
        for table in metadata.tables.values():
            words |= terms(split_name(table.name))
            for column in table.columns:
                words |= terms(split_name(column.name))
                if isinstance(column.type, String):
                    found = conn.execute(select(column).distinct().where(column.is_not(None)).limit(MAX_VALUES_PER_COLUMN)).scalars()
                    values |= {v for v in map(_value, map(str, found)) if VALUE_CHARS[0] <= len(v) <= VALUE_CHARS[1]}
    return SchemaVocabulary(frozenset(words), frozenset(values), **_alias_vocabulary(aliases or Aliases()))


def _inside(phrase: str, longer: str) -> bool:
    """Whether `phrase` is a run of whole words of `longer` (and not `longer` itself)."""
    return phrase != longer and f" {phrase} " in f" {longer} "


class SchemaLinker:
    """Re-ranks SQL sources by the schema words and stored values a question names.

    A value the question names (a capitalised phrase found in the database) adds `value_bonus` to that source.
    Schema words re-rank the SQL sources among themselves only: each gets `term_weight` times the IDF-weighted
    share of the question's words that are its table or column words, and then all SQL scores are shifted so
    the best SQL score is what it was. Words like "name" or "id" are in every schema and weigh little, and
    shared words cannot pull a documents or web question into a database (tuned on Spider dev, docs/experiments/router.md).
    """

    def __init__(self, vocabularies: dict[str, SchemaVocabulary], term_weight: float, value_bonus: float) -> None:
        self._vocabularies = vocabularies
        counts: dict[str, int] = {}
        for vocabulary in vocabularies.values():
            for term in vocabulary.terms:
                counts[term] = counts.get(term, 0) + 1
        self._idf = {t: math.log(1 + len(vocabularies) / n) for t, n in counts.items()}
        # Every source's aliases, read as the words they stand for whichever database a question turns out to mean.
        self._alias_terms = {a: t for v in vocabularies.values() for a, t in v.alias_terms.items()}
        self._term_weight = term_weight
        self._value_bonus = value_bonus

    def words(self, question: str) -> set[str]:
        """The question's schema words: its own stemmed words and those its aliases stand for (歌手 -> singer)."""
        lowered = question.lower()
        return terms(question).union(*(t for a, t in self._alias_terms.items() if a.lower() in lowered))

    def phrases(self, question: str, name: str) -> set[str]:
        """The values `question` names for source `name`: its capitalised phrases, and the stored values whose
        alias it contains (法国 -> france)."""
        lowered = question.lower()
        aliased = {v for a, v in self._vocabularies[name].value_aliases.items() if a.lower() in lowered}
        return named_phrases(question) | aliased

    def aliases_named(self, question: str) -> set[str]:
        """The SQL sources one of whose table or value aliases the question contains (歌手 in 有多少歌手？); not
        column aliases, which are common words (国家, 名称, 年份) that news questions use as much."""
        lowered, chinese = question.lower(), has_chinese(question)
        named = ((n, a) for n, v in self._vocabularies.items() for a in (*v.table_aliases, *v.value_aliases))
        # An alias counts in a question of its own script only: `TV节目` is no alias an English question names.
        return {n for n, a in named if has_chinese(a) == chinese and a.lower() in lowered}

    def term_shares(self, question: str) -> dict[str, float]:
        words = self.words(question)
        total = sum(self._idf.get(w, 0.0) for w in words)
        if not total:
            return {name: 0.0 for name in self._vocabularies}
        return {name: sum(self._idf[w] for w in words & v.terms) / total for name, v in self._vocabularies.items()}

    def named_values(self, question: str) -> dict[str, set[str]]:
        return {name: self.phrases(question, name) & v.values for name, v in self._vocabularies.items()}

    def names_only_in(self, question: str, source: str, other: str) -> set[str]:
        """The table or column words and stored values `question` names that SQL source `source` has and `other`
        lacks (stemmed words, lower-cased values): what would take a follow-up from `other` to `source`."""
        if source not in self._vocabularies or other not in self._vocabularies:
            return set()
        there, here = self._vocabularies[source], self._vocabularies[other]
        words = self.words(question) & there.terms - here.terms - REQUEST_WORDS
        held = self.phrases(question, other) & here.values
        # "america" (car_1's continent) inside "South America", which the previous database holds, names nothing new.
        values = {v for v in self.phrases(question, source) & there.values - here.values if not any(_inside(v, h) for h in held)}
        return words | values

    def adjust(self, question: str, scores: dict[str, float]) -> dict[str, float]:
        """New scores for the SQL sources among `scores`; other sources are left out of the result."""
        linked = [name for name in scores if name in self._vocabularies]
        if not linked:
            return {}
        values = self.named_values(question)
        shares = self.term_shares(question)
        plain = {n: scores[n] + (self._value_bonus if values[n] else 0.0) for n in linked}
        boosted = {n: plain[n] + self._term_weight * shares[n] for n in linked}
        shift = max(boosted.values()) - max(plain.values())
        return {n: boosted[n] - shift for n in linked}
