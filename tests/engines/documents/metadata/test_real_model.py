"""The metadata path with the real local model: the demo handbook's dated policies through the router, and the
issue's PEP declaration, exactly as written, through `ragrouter ask --source peps --json`."""

import json
import subprocess
import sys
from pathlib import Path

from tests.engines.documents.metadata.peps_like import write_peps


def test_the_newest_policy_is_found_by_its_date(router) -> None:
    trace = router.ask("Which is the newest policy?", source="handbook")
    assert trace.metadata_query is not None and trace.metadata_query.instruction["sort_by"] == "published"
    assert trace.metadata_query.documents[0]["title"] == "Annual Leave Policy Update (2024)"
    assert "Annual Leave Policy Update (2024) (leave-policy-2024-update.md), published 2024-01-01" in trace.answer
    assert trace.passages[0].id == "leave-policy-2024-update.md"


def test_the_earliest_rule_is_found_when_asked_in_chinese(router) -> None:
    trace = router.ask("最早的制度是哪一条？", source="handbook")
    assert trace.metadata_query is not None and trace.metadata_query.documents[0]["published"] == "2019-03-01"
    assert trace.answer.startswith("符合条件的文档共 10 篇") and "attendance-rule-2019.md" in trace.answer


def test_a_content_question_with_a_count_word_is_answered_by_retrieval(router) -> None:
    trace = router.ask("How many days of annual leave do employees get?", source="handbook")
    assert trace.metadata_query is None and "metadata instruction" not in trace.timings_ms


def test_the_pep_declaration_works_as_written_through_the_cli(cli_env: dict, tmp_path: Path) -> None:
    sources = str(write_peps(tmp_path))
    ingest = subprocess.run(
        [sys.executable, "-m", "ui.cli", "ingest", "--sources", sources], env=cli_env, capture_output=True, text=True, timeout=600
    )
    assert ingest.returncode == 0, ingest.stderr
    asked = subprocess.run(
        [sys.executable, "-m", "ui.cli", "ask", "--source", "peps", "--json", "--sources", sources, "How many Final PEPs are there?"],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert asked.returncode == 0, asked.stderr
    trace = json.loads(asked.stdout)
    assert trace["metadata_query"]["matched"] == 4 and trace["answer"] == "4 documents match status == Final."
