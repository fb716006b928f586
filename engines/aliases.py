"""A database's names and stored values in the other language: what lets a Chinese question reach an English-named
database (and an English question a Chinese-named one).

Aliases come from the model (tools/aliases.py, cached) or the sources file (which wins), and are checked against
the schema here: an alias of a table or column the database lacks, or of a value it does not store, is dropped.
The router reads them as profile texts and linking words; the SQL path reads them as hints to the model.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# A table's alias text lists at most this many columns: e5 reads ~510 tokens, and a long list blurs the table's subject.
MAX_COLUMNS_SHOWN = 24


class Aliases(BaseModel):
    """`names`: a table (`singer`) or a column (`singer.Country`) -> its name in the other language (歌手, 国家).
    `values`: a stored text value (`France`) -> its name in the other language (法国)."""

    model_config = ConfigDict(extra="forbid")
    names: dict[str, str] = {}
    values: dict[str, str] = {}

    def checked(self, columns: dict[str, list[str]], stored: set[str]) -> Aliases:
        """Only the aliases of tables, columns and values the database has (by exact name), each alias non-empty
        and not the name itself."""
        known = set(columns) | {f"{t}.{c}" for t, names in columns.items() for c in names}
        names = {k: v.strip() for k, v in self.names.items() if k in known and _useful(k, v)}
        values = {k: v.strip() for k, v in self.values.items() if k in stored and _useful(k, v)}
        return Aliases(names=names, values=values)

    def over(self, generated: Aliases) -> Aliases:
        """These aliases (a person's, from the sources file) with `generated` filling the names and values they leave out."""
        return Aliases(names={**generated.names, **self.names}, values={**generated.values, **self.values})

    def table_texts(self, columns: dict[str, list[str]]) -> list[str]:
        """One text per aliased table in the other language, for the router to embed: `歌手（singer）：姓名、国家、年龄`."""
        texts = []
        for table, names in columns.items():
            aliased = [self.names[f"{table}.{c}"] for c in names if f"{table}.{c}" in self.names][:MAX_COLUMNS_SHOWN]
            if table in self.names or aliased:
                texts.append(f"{self.names.get(table, table)}（{table}）：{'、'.join(aliased)}")
        return texts


def _useful(name: str, alias: str) -> bool:
    alias = alias.strip()
    return bool(alias) and alias.lower() != name.split(".")[-1].lower() and len(alias) <= 40
