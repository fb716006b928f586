"""The evaluation harness on small slices of the public data: every suite runs end to end with the real model,
embeddings, Milvus Lite and SQLite, and writes the report keys scripts rely on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engines.settings import Settings
from evals.answers_suite import SPOT_CHECKS
from evals.datasets import EVAL_DIR, answers_questions, retrieval_questions, router_questions, sql_questions
from evals.metrics import f1, ndcg_at, recall_at, word_support
from evals.run import run_suite
from evals.sql_suite import same_result
from evals.zh_follow_ups import cmrc_pairs, zh_sql_dialogues

pytestmark = pytest.mark.skipif(not EVAL_DIR.is_dir(), reason="../shared/eval is not beside this checkout")

DBS = ("concert_singer", "pets_1")


def _jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory, demo_settings: Settings, llm, embed):
    """SciFact cut down to the abstracts three dev claims cite plus 20 others, three CMRC2018 paragraphs (one the
    first Chinese follow-up pair's), two Spider databases, the web."""
    from engines.sources import load_sources
    from tools.build import build_router
    from tools.ingest import ingest_source

    folder = tmp_path_factory.mktemp("mini-eval")
    claims = retrieval_questions(EVAL_DIR, "dev")[:3]
    wanted = {doc for c in claims for doc in c["relevant"]}
    corpus = [json.loads(line) for line in (EVAL_DIR / "scifact" / "corpus.jsonl").open()]
    keep = [d for d in corpus if d["_id"] in wanted] + [d for d in corpus if d["_id"] not in wanted][:20]
    _jsonl(folder / "scifact.jsonl", keep)
    cmrc = json.loads((EVAL_DIR / "cmrc2018" / "cmrc2018_dev.json").read_text(encoding="utf-8"))
    pairs = cmrc_pairs(EVAL_DIR, "dev")[:1]
    cmrc["data"] = [a for a in cmrc["data"] if a["paragraphs"][0]["id"] == pairs[0]["key"].split(":", 1)[1]] + cmrc["data"][1:4:2]
    (folder / "cmrc2018.json").write_text(json.dumps(cmrc, ensure_ascii=False), encoding="utf-8")
    spider = EVAL_DIR / "spider" / "database"
    sources = folder / "sources.yaml"
    sources.write_text(
        "sources:\n"
        "  - {name: scifact, kind: documents, path: scifact.jsonl, format: jsonl, id_field: _id, text_fields: [title, text], language: en}\n"
        "  - {name: cmrc2018, kind: documents, path: cmrc2018.json, format: squad, language: zh}\n"
        + "".join(f"  - {{name: {db}, kind: sql, path: '{spider / db / db}.sqlite'}}\n" for db in DBS)
        + "  - {name: web, kind: web}\n",
        encoding="utf-8",
    )
    settings = demo_settings.model_copy(update={"state_dir": folder / "state"})
    for source in load_sources(sources):
        if source.kind == "documents":
            ingest_source(source, settings, embed, lambda: llm)
    router = build_router(settings, sources, llm=llm, embed=embed)
    return {"folder": folder, "sources": sources, "claims": claims, "zh_pairs": pairs, "router": router}


def _run(mini: dict, suite: str, items: list[dict], limit: int, name: str = "", **options: bool) -> dict:
    questions = _jsonl(mini["folder"] / f"{suite}.jsonl", items)
    out = mini["folder"] / f"report-{name or suite}"
    run_suite(suite, mini["sources"], questions, limit, "dev", out, router=mini["router"], **options)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert (out / "report.md").is_file() and report["n"] == min(limit, len(items)) and report["git_commit"]
    assert set(report["metrics"]) == set(report["baseline"])
    return report


def test_router_suite_scores_ours_and_the_stock_selectors(mini: dict) -> None:
    names = {"scifact", "web", *DBS}
    items = [q for q in router_questions(EVAL_DIR, "dev") if q["expected_source"] in names]
    report = _run(mini, "router", items, 8)
    assert 0.5 <= report["metrics"]["accuracy"] <= 1 and 0 <= report["baseline"]["accuracy"] <= 1
    assert set(report["details"]["systems"]) == {"ragrouter", "stock LLMSingleSelector", "stock EmbeddingSingleSelector"}
    lines = (mini["folder"] / "report-router" / "items.jsonl").read_text().splitlines()
    _run(mini, "router", items, 8)  # a rerun resumes: nothing is measured twice
    assert len((mini["folder"] / "report-router" / "items.jsonl").read_text().splitlines()) == len(lines) == 24


def test_sql_suite_measures_execution_accuracy(mini: dict) -> None:
    items = [q for q in sql_questions(EVAL_DIR, "dev") if q["db"] in DBS]
    report = _run(mini, "sql", items, 4)
    assert 0.25 <= report["metrics"]["execution_accuracy"] <= 1
    assert 0 <= report["metrics"]["invalid_sql_rate"] <= 1 and report["baseline"]["median_ms"] > 0


def test_sql_suite_replays_the_stored_queries(mini: dict) -> None:
    """--replay: our first attempts start from the queries an earlier run kept, the stock engine's SQL is reused."""
    items = [q for q in sql_questions(EVAL_DIR, "dev") if q["db"] in DBS]
    _run(mini, "sql", items, 4, name="written")
    earlier = mini["folder"] / "report-written"
    records = [json.loads(line) for line in (earlier / "items.jsonl").read_text().splitlines()]
    for record in records:  # queries no model would write for these questions: every replayed answer is now empty
        if record["system"] == "ragrouter":
            record["raw"] = ["SELECT * FROM Pets WHERE 1 = 0" if "pets_1" in record["key"] else "SELECT * FROM singer WHERE 1 = 0"] * 3
    _jsonl(earlier / "items.jsonl", records)
    out = mini["folder"] / "report-replayed"
    run_suite("sql", mini["sources"], mini["folder"] / "sql.jsonl", 4, "dev", out, router=mini["router"], replay=earlier)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    replayed = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert report["metrics"]["execution_accuracy"] == 0 and all("WHERE 1 = 0" in r["sql"] for r in replayed if r["system"] == "ragrouter")
    assert all("replay_ms" in r for r in replayed if r["system"] == "ragrouter")
    assert {(r["key"], r["sql"]) for r in replayed if r["system"] != "ragrouter"} == {
        (r["key"], r["sql"]) for r in records if r["system"] != "ragrouter"
    }
    assert "Replayed: 4 of our 4" in (out / "report.md").read_text(encoding="utf-8")


def test_retrieval_suite_reports_every_stage(mini: dict) -> None:
    report = _run(mini, "retrieval", mini["claims"], 3)
    stages = report["details"]["per_source"]["scifact"]
    assert set(stages) == {"dense", "bm25", "hybrid", "hybrid+rerank"}
    assert stages["hybrid"]["recall@100"] == 1.0  # every cited abstract is in the 23-document collection
    assert report["metrics"]["ndcg@10"] > 0.3 and 0 < report["details"]["compression"]["context_removed"] < 1


def test_retrieval_suite_with_crag_on_measures_each_rewrite_against_the_question(mini: dict) -> None:
    settings = mini["router"].settings
    settings.crag = True
    try:
        report = _run(mini, "retrieval", mini["claims"], 2, name="retrieval-crag")
    finally:
        settings.crag = False
    rewrites = report["details"]["rewrites"]["scifact"]
    assert set(rewrites) == {"asked", "hyde", "multi_query", "step_back"} and rewrites["asked"]["better"] == 0
    assert all(0 <= m["ndcg@10"] <= 1 and m["better"] + m["worse"] <= 2 for m in rewrites.values())
    lines = (mini["folder"] / "report-retrieval-crag" / "items.jsonl").read_text().splitlines()
    records = [r for r in map(json.loads, lines) if r["system"] == "CRAG rewrites"]
    assert len(records) == 2 and all(r["queries"]["multi_query"][0] == c["question"] for r, c in zip(records, mini["claims"]))


def test_retrieval_suite_with_the_structured_rewrite_reports_its_stages_and_guards(mini: dict) -> None:
    settings = mini["router"].settings
    settings.rewrite = "structured"
    try:
        report = _run(mini, "retrieval", mini["claims"], 2, name="retrieval-rewrite")
    finally:
        settings.rewrite = "off"
    stages = report["details"]["per_source"]["scifact"]
    assert {"hybrid, rewritten", "hybrid, rewritten with fallback"} <= set(stages)
    assert sum(report["details"]["structured_rewrite"]["guards"].values()) == 2


def test_answers_suite_compares_every_compression(mini: dict) -> None:
    # One SQuAD question: a single short passage, so the two LLM compressors make one call each.
    items = [q for q in answers_questions(EVAL_DIR, "dev") if q["set"] == "squad2" and q["answerable"]]
    report = _run(mini, "answers", items, 1, name="answers-compression", compression=True)
    figures = report["details"]["compressions"]
    assert set(figures) == {"off", "embedding", "llm_extract", "llm_filter"} and figures["off"]["chars_kept"] == 1.0
    assert all(0 < f["chars_kept"] <= 1 for f in figures.values()) and report["system"] == "compress=llm_extract"


def test_answers_suite_compares_the_question_as_asked_and_rewritten(tmp_path: Path, demo_settings: Settings, llm, embed) -> None:
    """--rewrite: a CMRC2018 question asked of a six-paragraph `cmrc2018` collection, as asked and rewritten."""
    from engines.sources import load_sources
    from tools.build import build_router
    from tools.ingest import ingest_source

    cmrc = [q for q in answers_questions(EVAL_DIR, "dev") if q["set"] == "cmrc2018"]
    paragraphs = [{"id": f"p{i}", "context": q["passages"][0]} for i, q in enumerate(cmrc[:6])]
    (tmp_path / "cmrc.json").write_text(json.dumps({"data": [{"title": "mini", "paragraphs": paragraphs}]}, ensure_ascii=False), encoding="utf-8")
    sources = tmp_path / "sources.yaml"
    sources.write_text("sources:\n  - {name: cmrc2018, kind: documents, path: cmrc.json, format: squad, language: zh}\n", encoding="utf-8")
    settings = demo_settings.model_copy(update={"state_dir": tmp_path / "state"})
    ingest_source(load_sources(sources)[0], settings, embed, lambda: llm)
    router = build_router(settings, sources, llm=llm, embed=embed)
    squad = [q for q in answers_questions(EVAL_DIR, "dev") if q["set"] == "squad2"]
    questions = _jsonl(tmp_path / "answers.jsonl", cmrc[:1] + squad)
    run_suite("answers", sources, questions, 4, "dev", tmp_path / "report", router=router, rewrite=True)
    report = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    figures = report["details"]["rewrites"]
    assert report["n"] == 1 and set(figures) == {"off", "structured"}  # SQuAD has no collection here: left out
    assert figures["off"]["guards"] == dict.fromkeys(figures["off"]["guards"], 0) and sum(figures["structured"]["guards"].values()) == 1
    assert all(0 <= f["answer_accuracy"] <= 1 and 0 <= f["gold_read"] <= 1 for f in figures.values())


def test_answers_suite_reports_rejection_and_faithfulness(mini: dict) -> None:
    items = [q for q in answers_questions(EVAL_DIR, "dev") if q["set"] in ("rgb-zh", "squad2")]
    report = _run(mini, "answers", items, 3)
    assert report["metrics"]["rejection_rate"] is not None and report["metrics"]["faithfulness"] is not None
    assert {"rgb-zh/noise", "rgb-zh/reject", "squad2/reading"} <= set(report["details"]["systems"]["ragrouter"]["by_set"])


def test_chat_suite_scores_chinese_sql_and_documents_follow_ups_and_where_they_are_routed(mini: dict) -> None:
    dialogue = next(d for d in zh_sql_dialogues(EVAL_DIR, "dev") if d["db"] == "pets_1" and len(d["turns"]) == 2)
    report = _run(mini, "chat", [dialogue, *mini["zh_pairs"]], 2)
    details = report["details"]
    assert set(details["zh_sql"]) == set(details["zh_docs"]) == {"ragrouter", "each turn asked alone", "stock CondenseQuestionChatEngine"}
    assert details["zh_sql"]["ragrouter"]["follow_ups"] == 1 and details["zh_docs"]["ragrouter"]["follow_ups"] == 1
    assert 0 <= details["zh_docs"]["ragrouter"]["follow_up_answer_contains_gold"] <= 1
    stays = details["stay_on_source"]
    assert set(stays) == {"zh-sql", "zh-docs"} and all(s["follow_ups"] == 1 and s["right_source"] in (0, 1) for s in stays.values())
    assert details["detection"]["zh: CMRC2018 follow-ups"]["questions"] >= 80
    assert "Chinese follow-ups on CMRC2018 paragraphs" in (mini["folder"] / "report-chat" / "report.md").read_text(encoding="utf-8")


def test_question_builders_cover_every_public_set() -> None:
    for split in ("dev", "test"):
        assert {q["set"] for q in sql_questions(EVAL_DIR, split)} == {"spider", "kaggledbqa"}
    crag = [q for q in answers_questions(EVAL_DIR, "dev") if q["set"] == "crag"]
    assert len(crag) == 9 and all(len(q["passages"]) == 5 and q["answers"][0] != "nan" for q in crag)


def test_hand_checks_of_the_judge_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evals import answers_suite
    from evals.report import Report

    checks = [
        {"system": "ragrouter", "key": "0:x:q", "hand": True, "note": "supported"},
        {"system": "ragrouter", "key": "9:gone", "hand": True, "note": ""},
    ]
    _jsonl(tmp_path / "faithfulness.dev.jsonl", checks)
    monkeypatch.setattr(answers_suite, "SPOT_CHECKS", tmp_path)
    report = Report("answers", "dev", tmp_path / "out", "q.jsonl", 1, Settings())
    results = {"ragrouter": [{"key": "0:x:q", "answer": "It is 5.", "faithful": False}]}
    answers_suite._spot_check_section(report, results, {"0:x:q": {"question": "How many?"}})
    assert report.data["details"]["faithfulness_spot_check"] == {"cases": 1, "judge_agrees_with_hand": 0.0}
    assert "How many?" in report.sections[-1]


def test_answer_check_thresholds_below_the_runs_are_replayed_from_its_drafts(tmp_path: Path) -> None:
    from evals import answers_suite
    from evals.report import Report

    checks = [{"label": "INSUFFICIENT", "probability": 0.3, "draft": "Paris."}, {"label": "INSUFFICIENT", "probability": 0.6, "draft": "Lyon."}]
    declined = "The sources do not state the answer to this question. The closest they come (unverified): Lyon."
    record = {"answer": declined, "declined": True, "crag": {"checks": checks}}
    assert answers_suite._at_support(record, 0.2, 0.6) == ("Paris.", False)
    assert answers_suite._at_support(record, 0.5, 0.6) == ("Lyon.", False)
    assert answers_suite._at_support(record, 0.7, 0.6) == (declined, True)
    report = Report("answers", "dev", tmp_path, "q.jsonl", 1, Settings())
    answers_suite._support_section(report, [record], [{"answerable": True, "answers": ["Paris"], "set": "squad2"}], 0.7, 0.7)
    sweep = report.data["details"]["crag_answer_support"]
    assert sweep[0.3] == {"right": 1, "rejected": 0, "false_rejected": 0} and sweep[0.4]["right"] == 0 and sweep[0.7]["false_rejected"] == 1
    # Checks made in the ambiguous band pass at its own bar whatever the threshold replayed.
    ambiguous = {**record, "crag": {"checks": [{**checks[0], "band": "ambiguous"}, {**checks[1], "probability": 0.75, "band": "ambiguous"}]}}
    assert answers_suite._at_support(ambiguous, 0.2, 0.6) == ("Lyon.", False) and answers_suite._at_support(ambiguous, 0.2, 0.8) == (declined, True)
    # So do the low band's, since it too had no passage graded as stating the answer.
    low = {**record, "crag": {"checks": [{**checks[0], "band": "low"}, {**checks[1], "band": "low"}]}}
    assert answers_suite._at_support(low, 0.2, 0.6) == ("Lyon.", False) and answers_suite._at_support(low, 0.2, 0.7) == (declined, True)


def test_result_comparison_follows_order_by() -> None:
    assert same_result([(1,), (2,)], [(2,), (1,)], ordered=False)
    assert not same_result([(1,), (2,)], [(2,), (1,)], ordered=True)
    assert not same_result([(1,), (1,)], [(1,)], ordered=False)  # multisets, not sets


def test_spiders_own_match_takes_the_columns_in_any_order() -> None:
    gold = [("Aruba", 103000), ("Chad", 7651000)]
    swapped = [(7651000, "Chad"), (103000, "Aruba")]
    assert same_result(swapped, gold, ordered=False, any_column_order=True) and not same_result(swapped, gold, ordered=False)
    assert same_result([(103000, "Aruba"), (7651000, "Chad")], gold, ordered=True, any_column_order=True)
    assert not same_result([(7651000, "Aruba"), (103000, "Chad")], gold, ordered=False, any_column_order=True)  # rows paired differently
    assert not same_result([("Aruba",), ("Chad",)], gold, ordered=False, any_column_order=True)  # a column missing
    assert same_result([], [], ordered=True, any_column_order=True) and not same_result([], gold, ordered=False, any_column_order=True)


def test_ranking_and_answer_metrics() -> None:
    relevance = {"a": 1, "b": 1}
    assert ndcg_at(["a", "b", "c"], relevance) == pytest.approx(1.0)
    assert ndcg_at(["c", "a"], relevance) < 1 and recall_at(["c", "a"], relevance, 1) == 0
    assert f1("The Normans were in France", ["France"]) > 0.3 and f1("12人", ["12人"]) == 1.0


def test_word_support_counts_what_the_answer_adds_to_the_question() -> None:
    question, passage = "When did the Siege of Antioch take place?", "After the successful Siege of Antioch in 1097, Bohemond left."
    assert word_support(question, "The Siege of Antioch was in 1097. [1]", [passage]) == 1.0
    assert word_support(question, "The Siege of Antioch was in 1097 [1] (crusades-overview (1099).md).", [passage]) == 1.0  # a cited name
    assert word_support(question, "It took place in 1098, led by Tancred.", [passage]) < 0.5
    assert word_support("北京冬残奥会吉祥物叫什么", "雪容融 [1]", ["北京冬残奥会吉祥物“雪容融”以灯笼为原型"]) == 1.0
    assert word_support("汤臣倍健上半年营收多少？", "10.29亿元", ["广告费占公司营业收入比重达到了10.29%"]) < 1.0


def test_word_support_agrees_with_the_hand_labels() -> None:
    # 50 dev answers read by a person against the passages they cite; the local 1.5B judge agreed on 30 of them.
    cases = [json.loads(line) for line in (SPOT_CHECKS / "faithfulness-judge.dev.jsonl").read_text(encoding="utf-8").splitlines()]
    agreed = sum((word_support(c["question"], c["answer"], c["contexts"]) == 1.0) == c["hand"] for c in cases)
    assert len(cases) == 50 and agreed >= 40


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ui.cli", "eval", *args], env=env, capture_output=True, text=True, timeout=300)


def test_eval_cli_rejects_bad_input(cli_env: dict, tmp_path: Path) -> None:
    assert _cli(cli_env, "nonsense").returncode == 2
    missing = _cli(cli_env, "router", "--questions", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "How many singers?"}\n', encoding="utf-8")
    lacking = _cli(cli_env, "router", "--questions", str(broken))
    assert lacking.returncode == 2 and "expected_source" in lacking.stderr
    no_log = _cli(cli_env, "sql", "--replay", str(tmp_path))
    assert no_log.returncode == 2 and "is not one" in no_log.stderr
    other_suite = _cli(cli_env, "router", "--replay", str(tmp_path))
    assert other_suite.returncode == 2 and "sql suite only" in other_suite.stderr
    not_answers = _cli(cli_env, "router", "--compression")
    assert not_answers.returncode == 2 and "answers suite only" in not_answers.stderr
    both = _cli(cli_env, "answers", "--compression", "--rewrite")
    assert both.returncode == 2 and "separate runs" in both.stderr
    held_apart = _cli(cli_env, "metadata", "--split", "test")
    assert held_apart.returncode == 2 and "held apart" in held_apart.stderr
