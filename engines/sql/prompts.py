"""Prompts of the SQL path: write SQL from the retrieved knowledge, repair a failed query, answer from rows."""

from __future__ import annotations

import re

from llama_index.core import PromptTemplate

from engines.answers.prompts import in_question_language
from engines.sql.knowledge import Knowledge

# Date functions per dialect, after the tables and only when a column has a date/time type (measured with the
# 1.5B default: without them it writes EXTRACT/MONTH() on SQLite; with them on every prompt it wrapped plain
# year columns in strftime: 7 of 120 Spider dev questions lost).
DIALECT_NOTES = {
    "sqlite": "strftime('%Y', col) is the year, strftime('%m', col) the month, date('now') today; SQLite has no EXTRACT, YEAR() or MONTH().",
    "postgresql": "EXTRACT(YEAR FROM col) is the year, date_trunc('month', col) the month, CURRENT_DATE today.",
    "mysql": "YEAR(col) is the year, MONTH(col) the month, CURDATE() today.",
}
# A column line of a CREATE TABLE statement whose type is a date or time (`\torder_date DATE NOT NULL,`).
DATE_COLUMN = re.compile(r"^\s+\S+ (?:DATE|DATETIME|TIMESTAMP|TIME)\b", re.I | re.M)
DIALECT_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MySQL", "mssql": "SQL Server", "duckdb": "DuckDB"}
# The whole prompt reads as a SQL file: CREATE TABLE statements, knowledge as comments, the question as the
# last comment, and the answer started with SELECT (`SQL_PREFIX`). The code models were trained on such files;
# on 120 Spider dev questions this got 66.7 % of first attempts right where LlamaIndex's text-to-SQL prompt
# ("Given an input question, ... SQLQuery: ") with its table summaries got 54.2 % (docs/experiments/text-to-sql.md).
WRITE_SQL = PromptTemplate(
    "{knowledge}{notes}{previous}-- Using valid {dialect}, answer the following question for the tables provided above.\n{failed}{question}\n"
)
# A follow-up in a conversation sees the query it follows, after the schema (so the schema's evaluation is still
# reused) and before its own question: "only those in Asia" edits that query.
PREVIOUS_QUERY = PromptTemplate("-- The previous question in this conversation, and the query that answered it:\n{question}\n{sql};\n")
SQL_PREFIX = "SELECT"
# Placed after everything the first prompt shares with the repair, so llama.cpp reuses that evaluation (a large
# schema takes tens of seconds to read on 2 cores).
FAILED_SQL = PromptTemplate("-- This query failed:\n{sql}\n-- Error: {error}\n-- Write a corrected query for the question.\n")
# The stock synthesis prompt (V2 variables) answers Chinese questions in English; this one is worded in the
# question's language (engines/answers/prompts.py says why).
ANSWER_WORDS = {
    "en": {
        "instructions": "Given an input question, answer it in one or two sentences from the SQL query results, "
        "in the same language as the question. If the result is empty or an error, say so.",
        "question": "Question: ",
        "result": "SQL result: ",
        "answer": "Answer: ",
    },
    "zh": {
        "instructions": "根据SQL查询结果，用中文以一两句话回答问题。如果结果为空或出错，就如实说明。",
        "question": "问题：",
        "result": "SQL结果：",
        "answer": "回答：",
    },
}
ANSWER_FROM_ROWS = in_question_language("{instructions}\n{question}{query_str}\nSQL: {sql_query}\n{result}{context_str}\n{answer}", ANSWER_WORDS)


def dialect_name(dialect: str) -> str:
    return DIALECT_NAMES.get(dialect, dialect)


def _comment(text: str) -> str:
    return "\n".join(f"-- {line}" for line in text.splitlines())


def knowledge_block(knowledge: Knowledge, budget_chars: int) -> str:
    """Tables (the most relevant that fit the budget), then descriptions, then examples, as a SQL file.

    The chosen tables and descriptions are listed in a fixed order, not by relevance: then every question on a
    database whose tables all fit shares the prompt up to its question (or up to its examples), and llama.cpp
    reuses that prefix's evaluation instead of reading the whole schema again (measured in
    docs/experiments/performance.md and docs/experiments/speed.md). Examples stay in relevance order, last.
    """
    tables, used = [], 0
    for ddl in knowledge.tables:
        if tables and used + len(ddl) > budget_chars:
            break
        tables.append(ddl)
        used += len(ddl)
    parts = ["\n\n".join(sorted(tables))]
    if knowledge.descriptions:
        parts.append("-- What the tables and columns mean:\n" + "\n".join(_comment(d) for d in sorted(knowledge.descriptions)))
    if knowledge.examples:
        parts.append("-- Questions answered before:\n" + "\n".join(f"{_comment(q)}\n{sql.rstrip(';')};" for q, sql in knowledge.examples))
    return "\n\n".join(parts) + "\n\n"


def previous_block(question: str, sql: str) -> str:
    return PREVIOUS_QUERY.format(question=_comment(question), sql=sql.strip().rstrip(";"))


def write_prompt(question: str, knowledge: Knowledge, dialect: str, budget_chars: int, failed: str = "", previous: str = "") -> str:
    block = knowledge_block(knowledge, budget_chars)
    dated = any(DATE_COLUMN.search(ddl) for ddl in knowledge.tables)
    notes = f"-- {dialect_name(dialect)} dates: {DIALECT_NOTES.get(dialect, 'use the dialect’s own date functions.')}\n" if dated else ""
    return WRITE_SQL.format(
        dialect=dialect_name(dialect), notes=notes, knowledge=block, question=_comment(question), failed=failed, previous=previous
    )


def repair_prompt(question: str, knowledge: Knowledge, dialect: str, budget_chars: int, sql: str, error: str, previous: str = "") -> str:
    """The first prompt, with the failed query and its error just before the question."""
    return write_prompt(question, knowledge, dialect, budget_chars, FAILED_SQL.format(sql=sql, error=" ".join(error.split())), previous)
