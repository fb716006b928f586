"""Chat suite: follow-up questions in conversations.

SParC and CoSQL (split by database, as Spider): every turn's SQL scored by execution as the SQL suite scores it;
ours (the cheap check, the condense step, the SQL prompt that sees the previous query) beside each turn asked
alone with our SQL path, and beside LlamaIndex's stock CondenseQuestionChatEngine over the stock
NLSQLTableQueryEngine, on the same model. TREC CAsT (2020 dev, 2021 test): how often our standalone question
retrieves the turn's canonical passage, beside the raw utterance (the floor) and the people's rewrite (the
ceiling); 2020 carries no passages, so its dev run measures the check and the rewrites only.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from llama_index.core import SQLDatabase
from llama_index.core.chat_engine import CondenseQuestionChatEngine
from llama_index.core.query_engine import NLSQLTableQueryEngine

from engines.conversation.condense import Condensed, Condenser
from engines.conversation.previous import following
from engines.routing.router import RagRouter
from engines.sql.engine import TextToSQLQueryEngine, engine_limits
from engines.trace import RouteRecord, SqlAttempt, Trace
from evals.metrics import latency
from evals.report import Report, latency_histogram
from evals.runlog import RunLog
from evals.sql_suite import execute, score
from tools.chat import condense_llm, previous_of

OURS = "ragrouter"
ALONE = "each turn asked alone"
STOCK = "stock CondenseQuestionChatEngine"
CAST_SYSTEMS = ("raw utterance", "ragrouter", "manual rewrite")
CAST_TOP_K = 10


def _sql_of(metadata: dict) -> str | None:
    attempts = metadata.get("attempts") or [{"sql": None}]
    return attempts[-1]["sql"]


def _timed(call: Callable[[], dict]) -> tuple[dict, float]:
    start = time.perf_counter()
    try:
        metadata = call()
    except Exception:  # a crash in generation or execution is a failed prediction
        metadata = {}
    return metadata, round(1000 * (time.perf_counter() - start), 1)


def _condense(condenser: Condenser, question: str, history: list[Trace]) -> tuple[Condensed, dict]:
    """The condensed question, and what the log keeps of it."""
    start = time.perf_counter()
    condensed = condenser.condense(question, history)
    ms = round(1000 * (time.perf_counter() - start), 1)
    record = {
        "standalone": condensed.question,
        "mark": condensed.mark,
        "rewritten": condensed.rewritten,
        "condense_ms": ms,
        "condense_calls": condensed.llm_calls,
    }
    return condensed, record


def _ours(engine: TextToSQLQueryEngine, condenser: Condenser, item: dict) -> dict:
    """Each turn condensed over the turns before it (as the product keeps them), then answered with the previous
    query in view when the check marks it a follow-up."""
    history: list[Trace] = []
    turns = []
    for turn in item["turns"]:
        condensed, record = _condense(condenser, turn["utterance"], history)
        previous = previous_of(history[-1]) if history and condensed.mark else None  # what the product passes (tools/chat.py)
        with following(previous):
            metadata, ms = _timed(lambda q=condensed.question: engine.query(q).metadata)
        sql = _sql_of(metadata)
        route = RouteRecord(chosen=item["db"], candidates=[], reason="", selector="eval")
        attempts = [SqlAttempt(**a) for a in metadata.get("attempts", [])]
        history.append(Trace(question=turn["utterance"], standalone_question=condensed.question, route=route, sql=sql, sql_attempts=attempts))
        turns.append({"sql": sql, "ms": round(ms + record["condense_ms"], 1), **record})
    return {"turns": turns}


def _alone(engine: TextToSQLQueryEngine, item: dict) -> dict:
    turns = []
    for turn in item["turns"]:
        metadata, ms = _timed(lambda q=turn["utterance"]: engine.query(q).metadata)
        turns.append({"sql": _sql_of(metadata), "ms": ms})
    return {"turns": turns}


def _stock(chat: CondenseQuestionChatEngine, item: dict) -> dict:
    chat.reset()
    turns = []
    for turn in item["turns"]:

        def ask(q: str = turn["utterance"]) -> dict:
            response = chat.chat(q)
            return response.sources[0].raw_output.metadata if response.sources else {}

        metadata, ms = _timed(ask)
        turns.append({"sql": metadata.get("sql_query"), "ms": ms})
    return {"turns": turns}


def _score_sql(router: RagRouter, items: list[dict], logged: dict[str, list[dict]]) -> dict[str, dict]:
    databases = {t.source.name: t.database for t in router.tools if t.database is not None}
    golds = [[execute(databases[i["db"]].engine, t["query"]) for t in i["turns"]] for i in items]
    summaries = {}
    for name, records in logged.items():
        follow_ups, firsts, whole, ms_follow = [], [], [], []
        for item, record, gold in zip(items, records, golds):
            database = databases[item["db"]]
            right = [
                score(database, t["sql"], g, turn["query"], guarded=name != STOCK)["correct"]
                for t, g, turn in zip(record["turns"], gold, item["turns"])
            ]
            firsts.append(right[0])
            follow_ups += right[1:]
            ms_follow += [t["ms"] for t in record["turns"][1:]]
            whole.append(all(right))
        summaries[name] = {
            "follow_up_execution_accuracy": round(float(np.mean(follow_ups)), 4),
            "first_turn_execution_accuracy": round(float(np.mean(firsts)), 4),
            "interaction_match": round(float(np.mean(whole)), 4),
            "follow_ups": len(follow_ups),
            **{f"follow_up_{k}": v for k, v in latency(ms_follow).items()},
        }
    return summaries


def _condense_cost(records: list[dict]) -> dict:
    follow_ups = [t for r in records for t in r["turns"][1:]]
    marked = [t for t in follow_ups if t["mark"]]
    return {
        "follow_ups": len(follow_ups),
        "check_left_as_asked": round(1 - len(marked) / max(len(follow_ups), 1), 4),
        "rewritten": round(float(np.mean([t["rewritten"] for t in follow_ups])) if follow_ups else 0.0, 4),
        "condense_calls_per_follow_up": round(float(np.mean([t["condense_calls"] for t in follow_ups])) if follow_ups else 0.0, 3),
        "condense_median_ms": round(float(np.median([t["condense_ms"] for t in follow_ups])) if follow_ups else 0.0, 1),
        "condense_median_ms_when_called": round(float(np.median([t["condense_ms"] for t in marked])) if marked else 0.0, 1),
    }


def _run_sql(router: RagRouter, items: list[dict], report: Report, log: RunLog, condenser: Condenser) -> dict[str, dict]:
    tools = {t.source.name: t for t in router.tools}
    settings = router.settings
    limits = {**engine_limits(settings), "write_answer": False}
    ours = {
        db: TextToSQLQueryEngine(database=tools[db].database, knowledge=tools[db].knowledge, llm=router.llm, source_name=db, **limits)
        for db in {i["db"] for i in items}
    }

    def stock(db: str) -> CondenseQuestionChatEngine:
        engine = NLSQLTableQueryEngine(sql_database=SQLDatabase(tools[db].database.engine), llm=router.llm, synthesize_response=False)
        return CondenseQuestionChatEngine.from_defaults(query_engine=engine, llm=router.llm)

    keyed = [(i["key"], i) for i in items]
    logged = {
        OURS: log.run(OURS, keyed, lambda i: _ours(ours[i["db"]], condenser, i)),
        ALONE: log.run(ALONE, keyed, lambda i: _alone(ours[i["db"]], i)),
        STOCK: log.run(STOCK, keyed, lambda i: _stock(stock(i["db"]), i)),
    }
    summaries = _score_sql(router, items, logged)
    summaries[OURS]["condense"] = _condense_cost(logged[OURS])
    latency_histogram(
        report, "chat_sql_latency.png", {n: [t["ms"] for r in rs for t in r["turns"][1:]] for n, rs in logged.items()}, "follow-up -> SQL -> rows"
    )
    return summaries


def _retrieve_hits(router: RagRouter, passages: list[str], queries: list[str]) -> np.ndarray:
    """The indexes of each query's CAST_TOP_K nearest `passages` by the product's embedding model: one fixed
    retriever for every way of asking, so only the question differs."""
    vectors = np.array(router.embed.get_text_embedding_batch(passages))
    asked = np.array([router.embed.get_query_embedding(q) for q in queries])
    order = np.argsort(-(asked @ vectors.T), axis=1)[:, :CAST_TOP_K]
    return order


def _run_cast(router: RagRouter, topics: list[dict], report: Report, log: RunLog, condenser: Condenser) -> dict:
    def condensed(topic: dict) -> dict:
        history: list[Trace] = []
        turns = []
        for turn in topic["turns"]:
            result, record = _condense(condenser, turn["raw"], history)
            history.append(Trace(question=turn["raw"], standalone_question=result.question, answer=(turn.get("passage") or "")[:200]))
            turns.append(record)
        return {"turns": turns}

    records = log.run("ragrouter condense", [(t["key"], t) for t in topics], condensed)
    flat = [(turn, ours) for topic, record in zip(topics, records) for turn, ours in zip(topic["turns"], record["turns"])]
    follow_ups = [(turn, ours) for turn, ours in flat if turn["number"] > 1]
    needed = [(turn, ours) for turn, ours in follow_ups if turn["manual"] != turn["raw"]]
    summary = {
        "turns": len(flat),
        "check_left_as_asked": round(float(np.mean([not o["mark"] for _, o in follow_ups])), 4),
        "check_agrees_with_people": round(float(np.mean([(o["mark"] is None) == (t["manual"] == t["raw"]) for t, o in follow_ups])), 4),
        "rewritten_when_people_rewrote": round(float(np.mean([o["rewritten"] for _, o in needed])), 4) if needed else None,
        "condense_median_ms": round(float(np.median([o["condense_ms"] for _, o in follow_ups])), 1),
    }
    if all(turn.get("passage") for turn, _ in flat):
        passages = list(dict.fromkeys(turn["passage"] for turn, _ in flat))
        index = {p: i for i, p in enumerate(passages)}
        for name, pick in zip(CAST_SYSTEMS, (lambda t, o: t["raw"], lambda t, o: o["standalone"], lambda t, o: t["manual"])):
            top = _retrieve_hits(router, passages, [pick(t, o) for t, o in flat])
            ranks = [next((r + 1 for r, j in enumerate(row) if j == index[t["passage"]]), None) for row, (t, _) in zip(top, flat)]
            summary[name] = {
                "hit_at_10": round(float(np.mean([r is not None for r in ranks])), 4),
                "hit_at_1": round(float(np.mean([r == 1 for r in ranks])), 4),
                "mrr_at_10": round(float(np.mean([1 / r if r else 0.0 for r in ranks])), 4),
            }
        summary["corpus_passages"] = len(passages)
    return summary


def run_chat_suite(router: RagRouter, items: list[dict], report: Report, log: RunLog) -> None:
    condenser = Condenser(lambda: condense_llm(router.settings, router.llm), router.settings.history_tokens)
    sql_items = [i for i in items if i["set"] in ("sparc", "cosql")]
    cast = [i for i in items if i["set"] == "cast"]
    summaries = _run_sql(router, sql_items, report, log, condenser) if sql_items else {}
    cast_summary = _run_cast(router, cast, report, log, condenser) if cast else {}
    by_set = {}
    for name in ("sparc", "cosql"):
        subset = [i for i in sql_items if i["set"] == name]
        if subset:
            records = {s: [log.records[(s, i["key"])] for i in subset] for s in (OURS, ALONE, STOCK)}
            by_set[name] = _score_sql(router, subset, records)
    headline = ("follow_up_execution_accuracy", "interaction_match", "first_turn_execution_accuracy", "follow_up_median_ms", "follow_up_p95_ms")
    if summaries:
        report.headline({k: summaries[OURS][k] for k in headline}, {k: summaries[STOCK][k] for k in headline}, STOCK)
        alone = summaries[ALONE]
        report.section(
            "## Follow-ups on SParC and CoSQL\n\n| system | follow-up EX | interaction match | first-turn EX | follow-up median ms | p95 ms |\n|---|---|---|---|---|---|\n"
            + "\n".join(
                f"| {n} | {s['follow_up_execution_accuracy']:.1%} | {s['interaction_match']:.1%} | {s['first_turn_execution_accuracy']:.1%} | "
                f"{s['follow_up_median_ms']:,.0f} | {s['follow_up_p95_ms']:,.0f} |"
                for n, s in summaries.items()
            )
            + f"\n\n{summaries[OURS]['follow_ups']} follow-up turns. Each turn asked alone with our SQL path: {alone['follow_up_execution_accuracy']:.1%}."
        )
        for name, per in by_set.items():
            report.section(
                f"### {name}\n\n"
                + "\n".join(f"- {n}: follow-up EX {s['follow_up_execution_accuracy']:.1%} over {s['follow_ups']}" for n, s in per.items())
            )
        cost = summaries[OURS]["condense"]
        report.section(
            f"## The condense step's cost\n\nThe cheap check left {cost['check_left_as_asked']:.1%} of follow-ups as asked (no model call); "
            f"{cost['rewritten']:.1%} were rewritten; {cost['condense_calls_per_follow_up']:.2f} model calls per follow-up; "
            f"median {cost['condense_median_ms']:,.0f} ms per follow-up ({cost['condense_median_ms_when_called']:,.0f} ms when the model was called)."
        )
    if cast_summary:
        rows = [
            f"| {n} | {cast_summary[n]['hit_at_1']:.1%} | {cast_summary[n]['hit_at_10']:.1%} | {cast_summary[n]['mrr_at_10']:.3f} |"
            for n in CAST_SYSTEMS
            if n in cast_summary
        ]
        table = "\n\n| question searched | hit@1 | hit@10 | MRR@10 |\n|---|---|---|---|\n" + "\n".join(rows) if rows else ""
        report.section(
            f"## TREC CAsT: standalone questions\n\n{cast_summary['turns']} turns. The check left {cast_summary['check_left_as_asked']:.1%} of follow-ups as asked, "
            f"and agreed with the people (who left a turn unchanged or rewrote it) on {cast_summary['check_agrees_with_people']:.1%}; "
            f"median condense time {cast_summary['condense_median_ms']:,.0f} ms per follow-up."
            + (
                f" Corpus: the {cast_summary['corpus_passages']} canonical passages pooled; the product's embedding model retrieves for every row."
                if rows
                else ""
            )
            + table
        )
    report.detail("systems", summaries)
    report.detail("by_set", by_set)
    report.detail("cast", cast_summary)
