"""The Chinese follow-up data (evals/zh_follow_ups.py): built by rule from the dev half only, the shipped files
what the rules build, and the follow-up check's rates on it (no model)."""

import json

import pytest

from evals.datasets import EVAL_DIR, QUESTIONS_DIR, read_jsonl
from evals.follow_up_detection import detection_rates
from evals.zh_follow_ups import cmrc_pairs, zh_singles, zh_sql_dialogues

pytestmark = pytest.mark.skipif(not EVAL_DIR.is_dir(), reason="../shared/eval is not beside this checkout")


def test_documents_pairs_point_back_at_a_subject_the_first_question_names_and_come_from_their_half() -> None:
    data = json.loads((EVAL_DIR / "cmrc2018" / "cmrc2018_dev.json").read_text(encoding="utf-8"))["data"]
    halves = {article["paragraphs"][0]["id"]: n % 2 for n, article in enumerate(data)}
    for split, half in (("dev", 0), ("test", 1)):
        pairs = cmrc_pairs(EVAL_DIR, split)
        assert len(pairs) >= 80 and {halves[p["key"].split(":", 1)[1]] for p in pairs} == {half}
        for pair in pairs:
            first, follow_up = pair["turns"]
            assert pair["title"] in first["utterance"] and pair["title"] not in follow_up["utterance"]
            assert pair["title"] in follow_up["standalone"] and follow_up["answers"]
        assert {"他", "它", "其", "此", "这位", "这个", "该", "ellipsis"} <= {p["pointer"] for p in pairs}


def test_sql_dialogues_keep_the_gold_sql_and_every_turn() -> None:
    dialogues = zh_sql_dialogues(EVAL_DIR, "dev")
    assert sum(len(d["turns"]) - 1 for d in dialogues) >= 60
    assert all(t["query"].upper().startswith("SELECT") and t["english"] and t["utterance"] != t["english"] for d in dialogues for t in d["turns"])
    assert len([q for q in zh_singles(EVAL_DIR, "dev") if q["from"] == "spider"]) == 40


def test_the_shipped_files_are_what_the_rules_build() -> None:
    for name, build in (("zh-docs", cmrc_pairs), ("zh-sql", zh_sql_dialogues), ("zh-single", zh_singles)):
        assert read_jsonl(QUESTIONS_DIR / f"chat-{name}.dev.jsonl") == build(EVAL_DIR, "dev")


def test_the_check_finds_chinese_follow_ups_and_leaves_single_questions() -> None:
    rates = detection_rates("dev")
    assert rates["zh: CMRC2018 follow-ups"]["marked"] >= 0.8 and rates["zh: CMRC2018 first questions"]["marked"] <= 0.05
    assert rates["en: Spider questions"]["marked"] <= 0.1 and rates["en: SParC follow-ups"]["marked"] >= 0.7
