"""Prompts of the SQL path: write SQL from the retrieved knowledge, repair a failed query, answer from rows."""

from __future__ import annotations

from llama_index.core import PromptTemplate

from engines.sql_knowledge import Knowledge

# Date functions per dialect, after the tables (measured with the 1.5B default: without them it writes
# EXTRACT/MONTH() on SQLite; with them first in the prompt it reached for strftime on questions without dates).
DIALECT_NOTES = {
    "sqlite": "strftime('%Y', col) is the year, strftime('%m', col) the month, date('now') today; SQLite has no EXTRACT, YEAR() or MONTH().",
    "postgresql": "EXTRACT(YEAR FROM col) is the year, date_trunc('month', col) the month, CURRENT_DATE today.",
    "mysql": "YEAR(col) is the year, MONTH(col) the month, CURDATE() today.",
}
DIALECT_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MySQL", "mssql": "SQL Server", "duckdb": "DuckDB"}
# LlamaIndex's text-to-SQL instructions and its "Question: ... SQLQuery: " cue (its default prompt), without
# its SQLResult/Answer format: the answer comes from the real rows, in a separate call. Measured on dev: asking
# for a ```sql block instead made the 1.5B default join tables the question did not need (README).
WRITE_SQL = PromptTemplate(
    "Given an input question, write one syntactically correct {dialect} SELECT query that answers it. "
    "Never query for all the columns of a table, only for the few columns the question asks for. "
    "Pay attention to use only the column names you can see in the tables below, and to which column is in "
    "which table; qualify column names with the table name when needed.\n\n"
    "{knowledge}### {dialect} dates\n{notes}\n\n{failed}Question: {question}\nSQLQuery: "
)
# Placed after everything the first prompt shares with the repair, so llama.cpp reuses that evaluation (a large
# schema takes tens of seconds to read on 2 cores).
FAILED_SQL = PromptTemplate("This query failed:\n{sql}\nError: {error}\nWrite a corrected query.\n\n")
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


def write_prompt(question: str, knowledge: Knowledge, dialect: str, budget_chars: int, failed: str = "") -> str:
    block = knowledge_block(knowledge, budget_chars)
    notes = DIALECT_NOTES.get(dialect, "the dialect's own date functions")
    return WRITE_SQL.format(dialect=dialect_name(dialect), notes=notes, knowledge=block, question=question, failed=failed)


def repair_prompt(question: str, knowledge: Knowledge, dialect: str, budget_chars: int, sql: str, error: str) -> str:
    """The first prompt, with the failed query and its error just before the question."""
    return write_prompt(question, knowledge, dialect, budget_chars, FAILED_SQL.format(sql=sql, error=error))
