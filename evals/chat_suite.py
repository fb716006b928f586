"""Chat suite: follow-up questions in conversations.

SParC, CoSQL (split by database, as Spider) and their Chinese translations (`zh-sql`): every turn's SQL scored by
execution on the turn's own database as the SQL suite scores it; ours (the cheap check, the condense step, the SQL
prompt that sees the previous query) beside each turn asked alone with our SQL path, and beside LlamaIndex's stock
CondenseQuestionChatEngine over the stock NLSQLTableQueryEngine, on the same model. Chinese CMRC2018 follow-ups
(`zh-docs`, evals/zh_follow_ups.py): does the answer contain the gold span, ours beside the follow-up asked alone
and the stock CondenseQuestionChatEngine over the same documents path. Every turn of ours is also routed over all
the reference sources as the product routes it (a follow-up keeps its source by the router's rule), to count the
follow-ups that stay on the right source; the margin-only rule of the first conversations round is scored on the
same routes. TREC CAsT (2020 dev, 2021 test): how often our standalone question retrieves the turn's canonical
passage, beside the raw utterance (the floor) and the people's rewrite (the ceiling); 2020 carries no passages, so
its dev run measures the check and the rewrites only. The follow-up check alone (no model) is scored on every set
of evals/follow_up_detection.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from llama_index.core import SQLDatabase
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.chat_engine import CondenseQuestionChatEngine
from llama_index.core.llms import ChatMessage
from llama_index.core.query_engine import NLSQLTableQueryEngine

from engines.conversation.condense import Condensed, Condenser
from engines.conversation.previous import following
from engines.routing.router import RagRouter
from engines.sql.engine import TextToSQLQueryEngine, engine_limits
from engines.trace import RESULT, RouteRecord, Trace
from engines.tracing.recorder import recording
from evals.follow_up_detection import detection_rates, detection_table
from evals.metrics import contains_answer, latency
from evals.report import Report, latency_histogram
from evals.runlog import RunLog
from evals.sql_suite import execute, score
from tools.build import built_sources
from tools.chat import condense_llm, previous_of

OURS = "ragrouter"
ALONE = "each turn asked alone"
STOCK = "stock CondenseQuestionChatEngine"
SQL_SETS = ("sparc", "cosql", "zh-sql")
CAST_SYSTEMS = ("raw utterance", "ragrouter", "manual rewrite")
CAST_TOP_K = 10


def _sql_of(metadata: dict) -> str | None:
    result = metadata.get(RESULT)
    return result.attempts[-1].sql or None if result and result.attempts else None


def _timed(call: Callable[[], dict]) -> tuple[dict, float]:
    start = time.perf_counter()
    try:
        metadata = call()
    except Exception:  # a crash in generation or execution is a failed prediction
        metadata = {}
    return metadata, round(1000 * (time.perf_counter() - start), 1)


def condense_turn(condenser: Condenser, question: str, history: list[Trace]) -> tuple[Condensed, dict]:
    """The condensed question, and what the log keeps of it."""
    start = time.perf_counter()
    with recording() as recorded:
        condensed = condenser.condense(question, history)
    ms = round(1000 * (time.perf_counter() - start), 1)
    record = {
        "standalone": condensed.question,
        "mark": condensed.mark,
        "rewritten": condensed.rewritten,
        "condense_ms": ms,
        "condense_calls": recorded.llm_calls,
    }
    return condensed, record


def routes_of(router: RagRouter, condensed: Condensed, routed_before: str | None) -> dict:
    """Where the product sends the turn over all sources (a follow-up of a turn routed to `routed_before` keeps it by
    the router's rule), and where the first round's rule (kept unless another scores over the margin) sent it."""
    route = router.route(condensed.question)
    if not (condensed.mark and routed_before):
        return {"routed": route.chosen, "routed_margin_only": route.chosen}
    scores = {c.name: c.score for c in route.candidates}
    margin_only = route.chosen if scores[route.chosen] - scores[routed_before] > router.settings.follow_up_keep_margin else routed_before
    return {"routed": router.keep_previous(route, routed_before, condensed.question).chosen, "routed_margin_only": margin_only}


def _ours(router: RagRouter, engine: TextToSQLQueryEngine, condenser: Condenser, item: dict) -> dict:
    """Each turn condensed over the turns before it (as the product keeps them), routed over all sources, then
    answered on the turn's own database with the previous query in view when the check marks it a follow-up."""
    history: list[Trace] = []
    turns = []
    routed = None
    for turn in item["turns"]:
        condensed, record = condense_turn(condenser, turn["utterance"], history)
        routes = routes_of(router, condensed, routed)
        routed = routes["routed"]
        previous = previous_of(history[-1]) if history and condensed.mark else None  # what the product passes (tools/chat.py)
        with following(previous):
            metadata, ms = _timed(lambda q=condensed.question: engine.query(q).metadata)
        sql = _sql_of(metadata)
        route = RouteRecord(chosen=item["db"], candidates=[], reason="", selector="eval")
        attempts = metadata[RESULT].attempts if RESULT in metadata else []
        history.append(Trace(question=turn["utterance"], standalone_question=condensed.question, route=route, sql=sql, sql_attempts=attempts))
        turns.append({"sql": sql, "ms": round(ms + record["condense_ms"], 1), **record, **routes})
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
    databases = {t.source.name: t.database for t in built_sources(router) if t.database is not None}
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


def _run_sql(router: RagRouter, items: list[dict], report: Report, log: RunLog, condenser: Condenser) -> dict[str, list[dict]]:
    """Every SQL dialogue through the three systems; the records of each, in the order of `items`."""
    tools = {t.source.name: t for t in built_sources(router)}
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
        OURS: log.run(OURS, keyed, lambda i: _ours(router, ours[i["db"]], condenser, i)),
        ALONE: log.run(ALONE, keyed, lambda i: _alone(ours[i["db"]], i)),
        STOCK: log.run(STOCK, keyed, lambda i: _stock(stock(i["db"]), i)),
    }
    latency_histogram(
        report, "chat_sql_latency.png", {n: [t["ms"] for r in rs for t in r["turns"][1:]] for n, rs in logged.items()}, "follow-up -> SQL -> rows"
    )
    return logged


def _sql_summaries(router: RagRouter, items: list[dict], log: RunLog) -> dict[str, dict]:
    """The three systems scored on `items` (already run), with ours' condense cost."""
    records = {s: [log.records[(s, i["key"])] for i in items] for s in (OURS, ALONE, STOCK)}
    summaries = _score_sql(router, items, records)
    summaries[OURS]["condense"] = _condense_cost(records[OURS])
    return summaries


def _timed_answer(ask: Callable[[], object]) -> dict:
    """The text of what `ask` returns and how long it took; an empty answer when it failed."""
    result, ms = _timed(lambda: {"answer": str(ask() or "")})
    return {"answer": result.get("answer", ""), "ms": ms}


def _docs_answer(engine: BaseQueryEngine, question: str) -> dict:
    return _timed_answer(lambda: engine.query(question).response)


def _docs_first(router: RagRouter, engine: BaseQueryEngine, item: dict) -> dict:
    """The first turn, answered once on the pair's collection and routed over all sources: every system's history."""
    first = item["turns"][0]["utterance"]
    return {**_docs_answer(engine, first), "routed": router.route(first).chosen}


def _docs_history(item: dict, first: dict) -> list[Trace]:
    question = item["turns"][0]["utterance"]
    route = RouteRecord(chosen=item["source"], candidates=[], reason="", selector="eval")
    return [Trace(question=question, standalone_question=question, route=route, answer=first["answer"])]


def _docs_ours(router: RagRouter, engine: BaseQueryEngine, condenser: Condenser, item: dict, first: dict) -> dict:
    condensed, record = condense_turn(condenser, item["turns"][1]["utterance"], _docs_history(item, first))
    answered = _docs_answer(engine, condensed.question)
    return {**answered, "ms": round(answered["ms"] + record["condense_ms"], 1), **record, **routes_of(router, condensed, first["routed"])}


def _docs_stock(router: RagRouter, engine: BaseQueryEngine, item: dict, first: dict) -> dict:
    """LlamaIndex's CondenseQuestionChatEngine (its own condense prompt, every follow-up rewritten) over the same
    documents path, with the same first turn in its history."""
    chat = CondenseQuestionChatEngine.from_defaults(query_engine=engine, llm=router.llm)
    history = [ChatMessage(role="user", content=item["turns"][0]["utterance"]), ChatMessage(role="assistant", content=first["answer"])]
    return _timed_answer(lambda: chat.chat(item["turns"][1]["utterance"], chat_history=history).response)


def _run_docs(router: RagRouter, items: list[dict], log: RunLog, condenser: Condenser) -> dict[str, dict]:
    """Chinese documents follow-ups: the gold span in the answer, ours beside the follow-up alone and the stock engine."""
    engines = {name: router.tool(name).tool.query_engine for name in {i["source"] for i in items}}
    keyed = [(i["key"], i) for i in items]
    firsts = dict(zip((i["key"] for i in items), log.run("zh-docs first turn", keyed, lambda i: _docs_first(router, engines[i["source"]], i))))
    logged = {
        OURS: log.run(OURS, keyed, lambda i: _docs_ours(router, engines[i["source"]], condenser, i, firsts[i["key"]])),
        ALONE: log.run(ALONE, keyed, lambda i: _docs_answer(engines[i["source"]], i["turns"][1]["utterance"])),
        STOCK: log.run(STOCK, keyed, lambda i: _docs_stock(router, engines[i["source"]], i, firsts[i["key"]])),
    }
    summaries = {}
    for name, records in logged.items():
        right = [contains_answer(r["answer"], i["turns"][1]["answers"]) for i, r in zip(items, records)]
        summaries[name] = {
            "follow_up_answer_contains_gold": round(float(np.mean(right)), 4),
            "follow_ups": len(right),
            **{f"follow_up_{k}": v for k, v in latency(r["ms"] for r in records).items()},
        }
    summaries[OURS]["by_pointer"] = {
        pointer: round(
            float(np.mean([contains_answer(r["answer"], i["turns"][1]["answers"]) for i, r in zip(items, logged[OURS]) if i["pointer"] == pointer])),
            4,
        )
        for pointer in sorted({i["pointer"] for i in items})
    }
    summaries[OURS]["condense"] = _condense_cost([{"turns": [{"mark": None}, r]} for r in logged[OURS]])
    return summaries


def stay_rates(items: list[dict], records: list[dict], gold_source: Callable[[dict], str]) -> dict:
    """Share of follow-ups (turns after the first) routed to the right source, by the router's rule and by the
    margin-only rule: over all, over those whose previous turn was routed right (what keeping a source can do),
    and over those the check marked."""
    turns = [(gold_source(i), before, t) for i, r in zip(items, records) for before, t in zip(r["turns"], r["turns"][1:])]
    after_right = [(g, b, t) for g, b, t in turns if b["routed"] == g]
    marked = [(g, b, t) for g, b, t in turns if t["mark"]]

    def share(triples: list, key: str) -> float | None:
        return round(float(np.mean([t[key] == g for g, _, t in triples])), 4) if triples else None

    return {
        "follow_ups": len(turns),
        "after_a_right_turn": len(after_right),
        "marked": len(marked),
        **{f"right_source{suffix}": share(turns, key) for key, suffix in (("routed", ""), ("routed_margin_only", "_margin_only"))},
        **{f"kept_right{suffix}": share(after_right, key) for key, suffix in (("routed", ""), ("routed_margin_only", "_margin_only"))},
        **{f"right_when_marked{suffix}": share(marked, key) for key, suffix in (("routed", ""), ("routed_margin_only", "_margin_only"))},
    }


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
            result, record = condense_turn(condenser, turn["raw"], history)
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


def _sql_section(title: str, summaries: dict[str, dict]) -> str:
    alone = summaries[ALONE]
    return (
        f"## {title}\n\n| system | follow-up EX | interaction match | first-turn EX | follow-up median ms | p95 ms |\n|---|---|---|---|---|---|\n"
        + "\n".join(
            f"| {n} | {s['follow_up_execution_accuracy']:.1%} | {s['interaction_match']:.1%} | {s['first_turn_execution_accuracy']:.1%} | "
            f"{s['follow_up_median_ms']:,.0f} | {s['follow_up_p95_ms']:,.0f} |"
            for n, s in summaries.items()
        )
        + f"\n\n{summaries[OURS]['follow_ups']} follow-up turns. Each turn asked alone with our SQL path: {alone['follow_up_execution_accuracy']:.1%}."
        + _cost_line(summaries[OURS]["condense"])
    )


def _cost_line(cost: dict) -> str:
    return (
        f" The cheap check left {cost['check_left_as_asked']:.1%} of follow-ups as asked (no model call); "
        f"{cost['rewritten']:.1%} were rewritten; {cost['condense_calls_per_follow_up']:.2f} model calls per follow-up; "
        f"median {cost['condense_median_ms']:,.0f} ms per follow-up ({cost['condense_median_ms_when_called']:,.0f} ms when the model was called)."
    )


def _docs_section(summaries: dict[str, dict]) -> str:
    ours = summaries[OURS]
    return (
        "## Chinese follow-ups on CMRC2018 paragraphs\n\n| system | answer contains the gold span | follow-up median ms | p95 ms |\n|---|---|---|---|\n"
        + "\n".join(
            f"| {n} | {s['follow_up_answer_contains_gold']:.1%} | {s['follow_up_median_ms']:,.0f} | {s['follow_up_p95_ms']:,.0f} |"
            for n, s in summaries.items()
        )
        + f"\n\n{ours['follow_ups']} follow-ups, each the second question of a pair on one paragraph. Ours by how the follow-up points back: "
        + ", ".join(f"{p} {v:.1%}" for p, v in ours["by_pointer"].items())
        + "."
        + _cost_line(ours["condense"])
    )


def _stay_section(stays: dict[str, dict]) -> str:
    def pct(value: float | None) -> str:
        return "–" if value is None else f"{value:.1%}"

    rows = [
        f"| {name} | {s['follow_ups']} | {pct(s['right_source'])} | {pct(s['right_source_margin_only'])} | {s['after_a_right_turn']} | "
        f"{pct(s['kept_right'])} | {pct(s['kept_right_margin_only'])} | {s['marked']} | {pct(s['right_when_marked'])} | {pct(s['right_when_marked_margin_only'])} |"
        for name, s in stays.items()
    ]
    return (
        "## Follow-ups on the right source, over all the reference sources\n\nEvery turn of ours routed as the product routes it; "
        "a follow-up the check marks keeps the previous turn's source by the router's rule (a database is left for another only when "
        "the question names a table, column or value the other has and the previous lacks), or by the first round's margin-only rule on "
        "the same scores. *After a right turn*: the follow-ups whose previous turn was routed to the right source, where keeping it "
        "is what counts.\n\n"
        "| set | follow-ups | right source | margin-only | after a right turn | right | margin-only | marked | right | margin-only |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows)
    )


def run_chat_suite(router: RagRouter, items: list[dict], report: Report, log: RunLog) -> None:
    condenser = Condenser(lambda: condense_llm(router.settings, router.llm), router.settings.history_tokens)
    sql_items = [i for i in items if i["set"] in SQL_SETS]
    docs = [i for i in items if i["set"] == "zh-docs"]
    cast = [i for i in items if i["set"] == "cast"]
    if sql_items:
        _run_sql(router, sql_items, report, log, condenser)
    english = [i for i in sql_items if i["set"] != "zh-sql"]
    chinese = [i for i in sql_items if i["set"] == "zh-sql"]
    summaries = _sql_summaries(router, english, log) if english else {}
    zh_summaries = _sql_summaries(router, chinese, log) if chinese else {}
    docs_summaries = _run_docs(router, docs, log, condenser) if docs else {}
    cast_summary = _run_cast(router, cast, report, log, condenser) if cast else {}
    by_set = {name: _sql_summaries(router, subset, log) for name in SQL_SETS if (subset := [i for i in sql_items if i["set"] == name])}
    stays = {
        name: stay_rates(subset, [log.records[(OURS, i["key"])] for i in subset], lambda i: i["db"])
        for name in SQL_SETS
        if (subset := [i for i in sql_items if i["set"] == name])
    }
    if docs:
        pairs = [{"turns": [log.records[("zh-docs first turn", i["key"])], log.records[(OURS, i["key"])]]} for i in docs]
        stays["zh-docs"] = stay_rates(docs, pairs, lambda i: i["source"])
    headline = ("follow_up_execution_accuracy", "interaction_match", "first_turn_execution_accuracy", "follow_up_median_ms", "follow_up_p95_ms")
    if lead := summaries or zh_summaries:
        report.headline({k: lead[OURS][k] for k in headline}, {k: lead[STOCK][k] for k in headline}, STOCK)
    elif docs_summaries:
        keys = ("follow_up_answer_contains_gold", "follow_up_median_ms", "follow_up_p95_ms")
        report.headline({k: docs_summaries[OURS][k] for k in keys}, {k: docs_summaries[STOCK][k] for k in keys}, STOCK)
    if summaries:
        report.section(_sql_section("Follow-ups on SParC and CoSQL", summaries))
    if zh_summaries:
        report.section(_sql_section("Chinese SQL follow-ups (SParC and CoSQL translated)", zh_summaries))
    for name, per in by_set.items():
        report.section(
            f"### {name}\n\n"
            + "\n".join(f"- {n}: follow-up EX {s['follow_up_execution_accuracy']:.1%} over {s['follow_ups']}" for n, s in per.items())
        )
    if docs_summaries:
        report.section(_docs_section(docs_summaries))
    if stays:
        report.section(_stay_section(stays))
    detection = detection_rates(report.split)
    report.section(
        "## The follow-up check alone (no model)\n\nRecall on follow-ups, and the share of single questions it marks (each costs a "
        "condense call inside a conversation), on the split's whole sets (`python -m evals.follow_up_detection`).\n\n" + detection_table(detection)
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
    report.detail("zh_sql", zh_summaries)
    report.detail("zh_docs", docs_summaries)
    report.detail("by_set", by_set)
    report.detail("stay_on_source", stays)
    report.detail("detection", detection)
    report.detail("cast", cast_summary)
