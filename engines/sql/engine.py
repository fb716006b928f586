"""The SQL path: knowledge retrieval -> SQL in the database's dialect -> guard -> read-only run -> repair -> answer.

LlamaIndex's NLSQLTableQueryEngine runs whatever the model writes, once, with no row limit; this engine is a
CustomQueryEngine (so the router takes it as any other tool) that guards every statement, repairs a failed one
at most `max_attempts` times, and reports every attempt. Its response metadata keeps NLSQLTableQueryEngine's
keys (`sql_query`, `result`, `col_keys`) and hands back a SqlResult (engines/trace.py) under RESULT; each attempt is a span holding its statement, row count and guard verdict.
"""

from __future__ import annotations

from typing import Literal

from llama_index.core.base.response.schema import Response
from llama_index.core.bridge.pydantic import ConfigDict, PrivateAttr
from llama_index.core.llms import LLM
from llama_index.core.query_engine import CustomQueryEngine

from engines.answers.streaming import complete_answer, show_rows, whole_answer
from engines.conversation.previous import previous_turn
from engines.language import answer_in_chinese
from engines.models.llm import can_continue, complete_with_prefix
from engines.settings import Settings
from engines.sql.database import GuardedSQLDatabase
from engines.sql.fixes import fix_columns, postgres_names
from engines.sql.guard import SQLRefused
from engines.sql.knowledge import Knowledge, SqlKnowledgeBase
from engines.sql.prompts import ANSWER_FROM_ROWS, SQL_PREFIX, previous_block, repair_prompt, write_prompt
from engines.sql.readout import read_out
from engines.sql.repair import Failure, classify_error, classify_refusal, repair_hint
from engines.sql.schema import Schema, read_schema
from engines.sql.shapes import reshape
from engines.sql.values import match_values
from engines.sql.vote import elect
from engines.trace import RESULT, SqlAttempt, SqlResult
from engines.tracing.recorder import OpenSpan, span

FENCE = "```"
SQL_STOP = ["\n\n", ";", "SQLResult:"]
# Continuing the SQL file, the model comments on its query after it ("-- Answer: 30", "-- Values of ...").
FILE_STOP = [*SQL_STOP, "--"]
# Sampled queries for the vote (engines/sql/vote.py): on 120 Spider dev questions 0.7 and 1.0 voted alike.
SAMPLE_TEMPERATURE = 0.7
NO_RESULT_EN = "I could not get an answer from the database: {error}"
NO_RESULT_ZH = "无法从数据库得到答案：{error}"


def extract_sql(text: str) -> str:
    """The query in the model's answer: after a `SQLQuery:` label, before any `SQLResult:`, inside a ```sql fence
    if it wrote one, without a trailing semicolon."""
    text = text.split("SQLResult:")[0].strip()
    text = text[len("SQLQuery:") :] if text.startswith("SQLQuery:") else text
    if FENCE in text:
        inside = text.split(FENCE)[1]
        text = inside[3:] if inside.lower().startswith("sql") else inside
    return text.strip().rstrip(";").strip()


def write_sql(llm: LLM, prompt: str, ballot: int = 0) -> str:
    """SQL only, begun with SELECT and stopped at the statement's end or a blank line. Ballot 0 is the greedy
    continuation of the prompt as the SQL file it is, where the model can be continued (the local one); then the
    greedy answer to it as the assistant, then the n-th sampled answer (reproducible on the local model). The
    two greedy queries are about as good and right on different questions, so they vote better than a greedy
    query and two of its samples (docs/experiments/text-to-sql.md, fifteenth step: 344 against 341 of 433 dev questions)."""
    if can_continue(llm):
        if ballot == 0:
            return extract_sql(llm.continue_prefixed(prompt, SQL_PREFIX, FILE_STOP))
        ballot -= 1
    temperature = SAMPLE_TEMPERATURE if ballot else 0.0
    return extract_sql(complete_with_prefix(llm, prompt, SQL_PREFIX, SQL_STOP, temperature=temperature, seed=ballot))


def _describe(opened: OpenSpan, attempt: SqlAttempt, outcome: tuple[SqlAttempt, Failure | None, dict] | None) -> None:
    """What an attempt's span shows: the statement as run, its rows, and the guard's or the database's verdict."""
    rows = len(outcome[2].get("result", [])) if outcome and outcome[1] is None else None
    verdict = "ran" if attempt.error is None else f"{attempt.kind}: {attempt.error}"
    opened.set(statement=attempt.ran or attempt.sql, rows=rows, verdict=verdict, fixes=attempt.fixes, votes=attempt.votes)
    opened.output = attempt.ran or attempt.sql


def engine_limits(settings: Settings) -> dict:
    """The engine's fields that the settings choose (the app and the suites build it alike)."""
    return {"max_attempts": settings.sql_max_attempts, "candidates": settings.sql_candidates, "vote": settings.sql_vote}


def _in_doubt(attempt: SqlAttempt, failure: Failure | None, rows: dict, ballots: int) -> bool:
    """Whether the first `ballots` queries' outcome calls for the further ones: the winner failed, returned no rows
    (the usual sign of a wrong filter), or not every reading returned its rows (they disagree, or one wrote no
    SQL). When they agree on rows, the further ballots could not outvote them, so they are not written: the vote's
    result is the same, at fewer ballots (Spider and KaggleDBQA test replays, docs/experiments/speed.md)."""
    return failure is not None or not rows.get("result") or attempt.votes < ballots


class TextToSQLQueryEngine(CustomQueryEngine):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    database: GuardedSQLDatabase
    knowledge: SqlKnowledgeBase
    llm: LLM
    source_name: str = ""  # the source it answers for: a follow-up builds on the previous query only when it ran here
    write_answer: bool = True  # False: rows and SQL only (the SQL suite scores only the SQL)
    max_attempts: int = 3
    candidates: int = 1  # queries written for the first attempt (`write_sql`'s ballots); their rows vote
    vote: Literal["always", "in_doubt"] = "always"  # in_doubt: two ballots, the others only when those leave the rows in doubt
    schema_budget_chars: int = 12_000
    _schema: Schema | None = PrivateAttr(default=None)

    @property
    def schema(self) -> Schema:
        if self._schema is None:
            self._schema = read_schema(self.database.engine, sorted(self.database.get_usable_table_names()))
        return self._schema

    def custom_query(self, query_str: str) -> Response:
        return self.replay(query_str, None)

    def replay(self, query_str: str, written: list[str] | None) -> Response:
        """Answer as `custom_query` does, with the first attempt's queries taken from `written` (an earlier run's
        `raw`) instead of the model when given: the fixes, the vote and any repair run as now, so a change to
        them is measured on stored queries without writing them again."""
        with span("sql knowledge", question=query_str):
            knowledge = self.knowledge.retrieve(query_str)
        attempts, rows = self._attempts(query_str, knowledge, written)
        last = attempts[-1]
        metadata = {"sql_query": last.ran or last.sql, "result": [], "col_keys": []}
        metadata.update(rows)
        if rows and self.write_answer:
            show_rows(metadata["sql_query"], metadata["col_keys"], metadata["result"])
        answer = self._answer(query_str, metadata, last) if self.write_answer else ""
        rows_seen = [list(row) for row in metadata["result"]]
        metadata[RESULT] = SqlResult(sql=metadata["sql_query"], rows=rows_seen, columns=list(metadata["col_keys"]), attempts=attempts)
        return Response(response=answer, metadata=metadata)

    def _attempts(self, question: str, knowledge: Knowledge, replayed: list[str] | None = None) -> tuple[list[SqlAttempt], dict]:
        """Write, guard and run SQL until it runs or fails for good; the attempts and the rows of the one that ran.
        `replayed`: the first attempt's queries as an earlier run wrote them."""
        dialect = self.database.dialect
        previous = self._previous_query()
        prompt = write_prompt(question, knowledge, dialect, self.schema_budget_chars, previous=previous)
        attempts: list[SqlAttempt] = []
        while len(attempts) < self.max_attempts:
            with span("sql", attempt=len(attempts) + 1) as opened:
                outcome = self._attempt(question, prompt, attempts, replayed)
                _describe(opened, attempts[-1], outcome)
            if outcome is None:
                if attempts[-1].kind == "repeated":
                    break
                prompt = repair_prompt(question, knowledge, dialect, self.schema_budget_chars, "(nothing)", "the answer held no SQL", previous)
                continue
            attempt, failure, rows = outcome
            if failure is None:
                return attempts, rows
            if not failure.fixable:
                break
            hint = repair_hint(failure, self.schema.names)
            prompt = repair_prompt(question, knowledge, dialect, self.schema_budget_chars, attempt.sql, hint, previous)
        return attempts, {}

    def _attempt(
        self, question: str, prompt: str, attempts: list[SqlAttempt], replayed: list[str] | None
    ) -> tuple[SqlAttempt, Failure | None, dict] | None:
        """One attempt, added to `attempts`: its queries written, fixed, run and voted on; None when the model wrote
        no SQL or repeated a query it had tried (the attempt added says which)."""
        first = not attempts
        fixed: dict[str, tuple[str, list[str]]] = {}  # kept across the two rounds of ballots: each query fixed and run once
        tried: dict[str, tuple[SqlAttempt, Failure | None, dict]] = {}
        raw = self._write(prompt, range(self._ballots(first)), replayed if first else None)
        written = self._fixed(question, raw, fixed)
        outcome = self._vote(written, tried) if written else None
        if first and len(raw) < self.candidates and (outcome is None or _in_doubt(*outcome, ballots=len(raw))):
            raw += self._write(prompt, range(len(raw), self.candidates), replayed)
            written = self._fixed(question, raw, fixed)
            outcome = self._vote(written, tried) if written else None
        if outcome is None:  # the model closed its SQL block at once: ask again, as for a syntax error
            attempts.append(SqlAttempt(sql="", error="the model wrote no SQL", kind="empty", raw=raw))
            return None
        attempt = outcome[0]
        if any(a.sql == attempt.sql for a in attempts):  # the model repeats itself: more tries will not help
            attempts.append(SqlAttempt(sql=attempt.sql, error="the model returned a query it had already tried", kind="repeated", raw=raw))
            return None
        attempt.raw = raw
        attempts.append(attempt)
        return outcome

    def _ballots(self, first: bool) -> int:
        """Queries written at once: one for a repair; for the first attempt all of them, or in doubt-driven voting
        the two greedy readings (the SQL file continued, the answer), which are right on different questions."""
        if not first:
            return 1
        return min(2, self.candidates) if self.vote == "in_doubt" else self.candidates

    def _write(self, prompt: str, ballots: range, replayed: list[str] | None) -> list[str]:
        """The queries of these ballots: from an earlier run's where it wrote them, else from the model."""
        return [replayed[n] if replayed is not None and n < len(replayed) else write_sql(self.llm, prompt, n) for n in ballots]

    def _fixed(self, question: str, raw: list[str], fixed: dict[str, tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
        """Each written query after the fixes, in order; a query already in `fixed` (samples often repeat) is not
        fixed (and looked up) again."""
        for sql in dict.fromkeys(raw):
            if sql not in fixed:
                fixed[sql] = self._fix(question, sql)
        return [fixed[sql] for sql in raw if fixed[sql][0]]

    def _previous_query(self) -> str:
        """The previous turn's question and query, when this is a follow-up to a query that ran on this source."""
        turn = previous_turn()
        if turn is None or not turn.sql or turn.source != self.source_name:
            return ""
        return previous_block(turn.question, turn.sql)

    def _vote(self, written: list[tuple[str, list[str]]], tried: dict) -> tuple[SqlAttempt, Failure | None, dict]:
        """Run each distinct query (guarded, like any other) and keep the one whose rows most of them returned;
        when none runs, the greedy query's failure is the one repaired."""
        for sql, fixes in written:
            if sql not in tried:
                tried[sql] = self._try(sql, fixes)
        outcomes = [tried[sql] for sql, _ in written]
        winner, votes = elect([rows if failure is None else None for _, failure, rows in outcomes])
        attempt, failure, rows = outcomes[winner]
        others = [sql for sql in dict.fromkeys(sql for sql, _ in written) if sql != attempt.sql]
        return attempt.model_copy(update={"votes": votes, "written": len(written), "chosen": winner, "others": others}), failure, rows

    def _fix(self, question: str, sql: str) -> tuple[str, list[str]]:
        """The schema-guided fixes (names, joins), the shape the question calls for, then compared strings in
        their stored spelling, and names as PostgreSQL needs them."""
        dialect = self.database.sqlglot_dialect
        sql, fixes = fix_columns(sql, self.schema, dialect)
        sql, shapes = reshape(question, sql, self.schema, dialect)
        sql, spellings = match_values(sql, self.database.engine, self.schema, dialect, question)
        sql, names = postgres_names(sql, self.schema, dialect)
        return sql, fixes + shapes + spellings + names

    def _try(self, sql: str, fixes: list[str]) -> tuple[SqlAttempt, Failure | None, dict]:
        try:
            ran = self.database.guarded(sql)
        except SQLRefused as err:
            failure = classify_refusal(err)
            return SqlAttempt(sql=sql, fixes=fixes, error=failure.message, kind=failure.kind), failure, {}
        try:
            _, rows = self.database.run_sql(ran)
        except Exception as err:  # the database's own error: classified, and sent back to the model when fixable
            failure = classify_error(err)
            return SqlAttempt(sql=sql, fixes=fixes, ran=ran, error=failure.message, kind=failure.kind), failure, {}
        return SqlAttempt(sql=sql, fixes=fixes, ran=ran), None, {"result": rows["result"], "col_keys": rows["col_keys"]}

    def _answer(self, question: str, metadata: dict, last: SqlAttempt) -> str:
        if last.error:  # no rows to answer from: say so plainly rather than let the model guess
            return (NO_RESULT_ZH if answer_in_chinese(question) else NO_RESULT_EN).format(error=last.error)
        said = read_out(metadata["result"], metadata.get("col_keys") or [], "zh" if answer_in_chinese(question) else "en")
        if said is not None:  # a small result said exactly, without the model
            return whole_answer(said)
        prompt = ANSWER_FROM_ROWS.format(query_str=question, sql_query=metadata["sql_query"], context_str=str(metadata["result"][:20]))
        return complete_answer(self.llm, prompt).strip()
