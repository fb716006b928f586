"""Prompts of the SQL path: write SQL from the retrieved knowledge, repair a failed query, answer from rows."""

from __future__ import annotations

from llama_index.core import PromptTemplate

from engines.sql_knowledge import Knowledge

# What small models get wrong per dialect (measured with the 1.5B default: EXTRACT/MONTH() on SQLite).
DIALECT_NOTES = {
    "sqlite": (
        "SQLite has no EXTRACT, YEAR(), MONTH(), NOW() or DATE_FORMAT: use strftime('%Y', col), strftime('%m', col), "
        "date(col), date('now') and julianday(a) - julianday(b). Concatenate strings with ||."
    ),
    "postgresql": "Use EXTRACT(YEAR FROM col), date_trunc('month', col), CURRENT_DATE and col::date. Use ILIKE for case-insensitive matches.",
    "mysql": "Use YEAR(col), MONTH(col), DATE_FORMAT(col, '%Y-%m'), CURDATE() and CONCAT(a, b).",
}
DIALECT_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MySQL", "mssql": "SQL Server", "duckdb": "DuckDB"}

WRITE_SQL = PromptTemplate(
    "Write one {dialect} SELECT query that answers the question, using only the tables and columns below. "
    "Select only the columns the question asks for. {notes}\n\n"
    "{knowledge}### Question\n{question}\n"
)
REPAIR_SQL = PromptTemplate(
    "{knowledge}### Question\n{question}\n\n"
    "### This {dialect} query failed\n{sql}\n\n### Error\n{error}\n\n"
    "Write a corrected {dialect} SELECT query that answers the question, using only the tables and columns above."
)
# The stock synthesis prompt (V2 variables) answers Chinese questions in English; this one keeps the language.
ANSWER_FROM_ROWS = PromptTemplate(
    "Given an input question, answer it in one or two sentences from the SQL query results, "
    "in the same language as the question. If the result is empty or an error, say so.\n"
    "Question: {query_str}\nSQL: {sql_query}\nSQL result: {context_str}\nAnswer: "
)


def dialect_name(dialect: str) -> str:
    return DIALECT_NAMES.get(dialect, dialect)


def knowledge_block(knowledge: Knowledge, budget_chars: int) -> str:
    """Tables (the most relevant that fit the budget), then descriptions, then examples.

    The chosen tables are listed in a fixed order, not by relevance: then every question on a database whose
    tables all fit shares the prompt up to its question, and llama.cpp reuses that prefix's evaluation instead
    of reading the whole schema again (measured below in the README).
    """
    tables, used = [], 0
    for ddl in knowledge.tables:
        if tables and used + len(ddl) > budget_chars:
            break
        tables.append(ddl)
        used += len(ddl)
    parts = ["### Tables\n" + "\n\n".join(sorted(tables))]
    if knowledge.descriptions:
        parts.append("### Descriptions\n" + "\n".join(f"- {d}" for d in knowledge.descriptions))
    if knowledge.examples:
        parts.append("### Examples\n" + "\n\n".join(f"Question: {q}\nSQL: {sql}" for q, sql in knowledge.examples))
    return "\n\n".join(parts) + "\n\n"


def write_prompt(question: str, knowledge: Knowledge, dialect: str, budget_chars: int) -> str:
    block = knowledge_block(knowledge, budget_chars)
    return WRITE_SQL.format(dialect=dialect_name(dialect), notes=DIALECT_NOTES.get(dialect, ""), knowledge=block, question=question)


def repair_prompt(question: str, knowledge: Knowledge, dialect: str, budget_chars: int, sql: str, error: str) -> str:
    block = knowledge_block(knowledge, budget_chars)
    return REPAIR_SQL.format(dialect=dialect_name(dialect), knowledge=block, question=question, sql=sql, error=error)
