"""The Streamlit app, driven by streamlit.testing.v1.AppTest, building its own real router from the environment."""

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tools.build import built

APP = str(Path(__file__).resolve().parents[2] / "ui" / "app.py")


@pytest.fixture()
def app(router, monkeypatch) -> AppTest:
    # `router` has ingested the demo into demo_settings' folders; the app reads the same folders from RAGROUTER_*.
    settings = router.settings
    monkeypatch.setenv("RAGROUTER_STATE_DIR", str(settings.state_dir))
    monkeypatch.setenv("RAGROUTER_MILVUS_URI", settings.milvus_uri)
    monkeypatch.setenv("RAGROUTER_WEB_BACKEND", settings.web_backend)
    monkeypatch.setenv("RAGROUTER_SEARXNG_URL", settings.searxng_url)
    at = AppTest.from_file(APP, default_timeout=300).run()
    assert not at.exception
    return at


def test_chat_shows_answer_route_and_sql(app: AppTest) -> None:
    app.chat_input[0].set_value("How many customers are older than 30?").run()
    assert not app.exception
    assert any("shop" in c.value for c in app.caption)
    assert any("SELECT" in c.value.upper() for c in app.code)
    assert "7" in " ".join(str(m.value) for m in app.markdown)
    assert any(e.label == "SQL attempts (1)" for e in app.expander)
    assert any("of the 2 queries written returned these rows" in c.value for c in app.caption)
    assert any(c.value.startswith("Margin to the runner-up") for c in app.caption)
    why_not = app.selectbox(key="why-not-0")
    assert "shop" not in why_not.options and why_not.value in why_not.options
    assert any("below **shop**" in str(m.value) for m in app.markdown)


def test_settings_switch_on_crag_and_the_answer_shows_its_corrective_path(app: AppTest) -> None:
    crag = next(t for t in app.toggle if t.label.startswith("Corrective RAG"))
    crag.set_value(True)
    next(b for b in app.button if b.label == "Apply").click().run()
    assert not app.exception
    app.chat_input[0].set_value("How many days of annual leave do employees get?").run()
    assert not app.exception
    labels = [e.label for e in app.expander]
    assert any(label.startswith("Corrective RAG: confidence") for label in labels)
    assert any("retrieve → grade" in str(m.value) for m in app.markdown)
    assert any(c.value.startswith("Memory of this process") for c in app.caption)


def test_selectors_are_compared_side_by_side(app: AppTest) -> None:
    app.chat_input[0].set_value("Who won the 2022 FIFA World Cup?").run()
    app.toggle(key="compare-0").set_value(True).run()
    assert not app.exception
    compared = [str(m.value) for m in app.markdown if str(m.value).startswith("**embedding**") or str(m.value).startswith("**llm**")]
    assert len(compared) == 2 and "→ **web**" in compared[0]


def test_empty_and_huge_questions_are_messages_and_the_app_keeps_working(app: AppTest) -> None:
    app.chat_input[0].set_value("   ").run()
    assert any("empty" in e.value for e in app.error)
    app.chat_input[0].set_value("How many customers? " * 400).run()  # a huge paste: 8,000 characters
    assert not app.exception and any("the limit is 2,000" in e.value for e in app.error)
    app.chat_input[0].set_value("How many customers are older than 30?").run()
    assert not app.exception and any("SELECT" in c.value.upper() for c in app.code)
    assert any(re.fullmatch(r"[0-9a-f]{32}", c.value) for c in app.code)  # the trace id, to copy


def test_feedback_under_an_answer_is_kept_with_its_trace_and_taught_to_the_router_and_sql_knowledge(app: AppTest, router) -> None:
    from engines.conversation.store import ConversationStore
    from engines.feedback.store import FeedbackStore

    question = "How many products are in the furniture category?"
    app.chat_input[0].set_value(question).run()
    app.button(key="right-0").click().run()
    assert any("Saved" in s.value for s in app.success)
    examples = built(router, "shop").knowledge.retrieve(question).examples
    assert examples[0][0] == question and "furniture" in examples[0][1]
    app.text_area(key="fix-0").set_value("DELETE FROM products").run()
    app.button(key="save-0").click().run()
    assert any("Not saved" in e.value and "select-only" in e.value for e in app.error)
    app.feedback(key="rate-0").set_value(0).run()
    app.selectbox(key="source-0").set_value("web").run()
    app.button(key="save-source-0").click().run()
    assert not app.exception and any("now go to web" in s.value for s in app.success)
    kept = FeedbackStore(ConversationStore(router.settings.conversations_path)).all()
    assert {(f.aspect, f.rating, f.correction, f.origin) for f in kept} == {
        ("sql", 1, None, "app"),
        ("answer", -1, None, "app"),
        ("route", -1, "web", "app"),
    }
    # The app's own router (built from the same folders) took both in: the SQL as an example, the question to the web.
    app.chat_input[0].set_value("How many customers are older than 30?").run()
    app.feedback(key="rate-1").set_value(0).run()
    assert any(e.label == "Feedback to look into (1)" for e in app.sidebar.expander)
    app.chat_input[0].set_value(question).run()
    assert not app.exception and any("Answered from **web**" in c.value for c in app.caption)


def test_a_cited_passage_opens_from_its_number_and_shows_what_compression_kept(app: AppTest) -> None:
    app.chat_input[0].set_value("How many days per week can I work remotely?").run()
    assert not app.exception
    opened = [c.value for c in app.caption if c.value.startswith("Cited passage [")]
    assert opened and all("handbook" in c for c in opened)
    assert any(c.value.startswith("The passage as retrieved: compression kept") for c in app.caption)
    assert any(":green-background[" in str(m.value) for m in app.markdown)
    assert any("first words after" in c.value for c in app.caption)  # the answer streamed in
    assert not any("▌" in str(m.value) for m in app.markdown)  # and the checked answer replaced the stream


def test_the_start_page_offers_examples_and_a_follow_up_shows_what_it_was_asked_as(app: AppTest) -> None:
    assert {"北京有哪些客户？", "What is the weather in Berlin today?"} <= {b.label for b in app.button}
    app.chat_input[0].set_value("How many customers are older than 30?").run()
    app.chat_input[0].set_value("What about Beijing?").run()
    assert not app.exception
    assert any(str(m.value).startswith("**Asked as:**") and "Beijing" in str(m.value) for m in app.markdown)
    assert [e.label for e in app.expander].count("Why this source?") == 2  # both turns, redrawn from the store
    assert "How many customers are older than 30?" in {b.label for b in app.sidebar.button}
    assert "北京有哪些客户？" not in {b.label for b in app.button}  # the examples are for a first question only


def test_an_unreachable_model_endpoint_is_an_error_message_not_a_hang(router, monkeypatch) -> None:
    import streamlit as st

    settings = router.settings
    for name, value in {
        "RAGROUTER_STATE_DIR": str(settings.state_dir),
        "RAGROUTER_MILVUS_URI": settings.milvus_uri,
        "RAGROUTER_LLM_BACKEND": "openai_like",
        "RAGROUTER_API_BASE": "http://127.0.0.1:9/v1",  # the discard port: nothing listens
    }.items():
        monkeypatch.setenv(name, value)
    st.cache_resource.clear()  # the models of the other tests are cached per process
    try:
        at = AppTest.from_file(APP, default_timeout=300).run()
        at.chat_input[0].set_value("How many days of annual leave do employees get?").run()
        assert not at.exception
        assert any("cannot reach the model endpoint http://127.0.0.1:9/v1" in e.value for e in at.error)
        assert not any("waiting in line" in i.value for i in at.info)  # an endpoint's questions do not queue
    finally:
        st.cache_resource.clear()


def test_a_sort_question_shows_its_metadata_instruction_and_the_documents_it_found(app: AppTest) -> None:
    app.chat_input[0].set_value("Which is the newest handbook policy?").run()
    assert not app.exception
    expander = next(e for e in app.expander if e.label.startswith("Metadata instruction:"))
    assert expander.label == "Metadata instruction: 10 documents matched"
    assert any("Milvus filter" in c.value for c in app.caption)
    assert "Annual Leave Policy Update (2024)" in " ".join(str(m.value) for m in app.markdown)
