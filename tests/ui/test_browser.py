"""The app in a real browser: `streamlit run` on 127.0.0.1, driven by headless Chromium through Playwright.

The server is its own process with its own state folder (Milvus Lite admits one process per data folder, and this
test process holds the session's), ingested by the CLI first. A screenshot of each answered page is kept in
test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from ui.cli import streamlit_command

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LAUNCH_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed and `make test` could not install it (apt-get)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory, search_server: str) -> Iterator[str]:
    state = tmp_path_factory.mktemp("browser-state")
    env = {
        **os.environ,
        "RAGROUTER_STATE_DIR": str(state),
        "RAGROUTER_MILVUS_URI": str(state / "milvus" / "browser.db"),
        "RAGROUTER_WEB_BACKEND": "searxng",
        "RAGROUTER_SEARXNG_URL": search_server,
    }
    subprocess.run([sys.executable, "-m", "ui.cli", "ingest"], env=env, cwd=ROOT, check=True, capture_output=True, timeout=900)
    port = _free_port()
    command = streamlit_command(port, "127.0.0.1")
    server = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if requests.get(f"{url}/_stcore/health", timeout=1).ok:
                    break
            except requests.ConnectionError:
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def page(app_url: str, tmp_path_factory: pytest.TempPathFactory):
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        # A fresh profile per run (Playwright's name for --user-data-dir).
        browser = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=LAUNCH_FLAGS, viewport={"width": 1280, "height": 1600}
        )
        page = browser.new_page()
        page.goto(app_url)
        # The model loads on the first run of the script; the chat input appears when the app is ready.
        page.get_by_test_id("stChatInputTextArea").wait_for(timeout=300_000)
        yield page
        browser.close()


def _ask(page, question: str) -> None:
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(question)
    box.press("Enter")


def test_the_start_page_offers_an_example_question_per_kind_of_source(page) -> None:
    page.get_by_text("Ask your first question").wait_for(timeout=60_000)
    buttons = page.locator("[data-testid='stMainBlockContainer'] button").all_inner_texts()
    # the demo's sources: handbook (documents), shop (SQL, its knowledge file's first example), web
    assert any("handbook" in b for b in buttons) and "北京有哪些客户？" in buttons and any("weather" in b for b in buttons)


def test_a_question_gets_an_answer_a_route_chart_and_a_screenshot(page) -> None:
    _ask(page, "How many customers are older than 30?")
    page.get_by_text("Answered from").first.wait_for(timeout=300_000)
    page.get_by_text("Why this source?").first.click()
    page.locator("[data-testid='stVegaLiteChart'], [data-testid='stArrowVegaLiteChart']").first.wait_for(timeout=60_000)
    page.locator("[data-testid='stDataFrame']").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)  # the result grid draws on a canvas after its frame appears
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser-sql-question.png"), full_page=True)
    text = page.inner_text("body")
    assert "Answered from shop" in text and "SELECT" in text.upper() and "7" in text


def test_a_follow_up_is_asked_as_a_standalone_question_and_both_turns_survive_a_reload(page) -> None:
    _ask(page, "What about Beijing?")
    page.get_by_text("Asked as:").first.wait_for(timeout=300_000)
    page.get_by_text("Answered from").nth(1).wait_for(timeout=300_000)
    assert "?c=" in page.url  # the conversation is in the address, so a reload reopens it
    page.reload()
    page.get_by_test_id("stChatInputTextArea").wait_for(timeout=300_000)
    page.get_by_text("Answered from").nth(1).wait_for(timeout=60_000)
    text = page.inner_text("body")
    assert "How many customers are older than 30?" in text and "What about Beijing?" in text and "Asked as:" in text
    assert text.count("Why this source?") == 2
    page.screenshot(path=str(ARTIFACTS / "browser-follow-up.png"), full_page=True)
    other_tab = page.context.new_page()  # a second tab is a second conversation: it opens on the start page
    other_tab.goto(page.url.split("?")[0])
    other_tab.get_by_text("Ask your first question").wait_for(timeout=120_000)
    assert "What about Beijing?" not in other_tab.inner_text("[data-testid='stMainBlockContainer']")
    other_tab.close()


def test_an_empty_question_shows_a_message_not_a_trace(page) -> None:
    _ask(page, "   ")
    page.get_by_text("empty").first.wait_for(timeout=60_000)
    assert "Traceback" not in page.inner_text("body")


def test_two_questions_sent_back_to_back_are_both_answered_and_both_saved(page) -> None:
    tab = page.context.new_page()  # a new chat: the second question is sent while the first is being answered
    tab.goto(page.url.split("?")[0])
    tab.get_by_text("Ask your first question").wait_for(timeout=120_000)
    _ask(tab, "How many orders are there?")
    tab.get_by_text("How many orders are there?").first.wait_for(timeout=60_000)
    _ask(tab, "How many products are there?")
    tab.get_by_text("How many products are there?").first.wait_for(timeout=60_000)
    assert "How many orders are there?" in tab.inner_text("[data-testid='stMainBlockContainer']")  # the first is still shown
    tab.get_by_text("Answered from").nth(1).wait_for(timeout=600_000)
    assert "?c=" in tab.url
    tab.reload()
    tab.get_by_test_id("stChatInputTextArea").wait_for(timeout=300_000)
    tab.get_by_text("Answered from").nth(1).wait_for(timeout=60_000)
    text = tab.inner_text("[data-testid='stMainBlockContainer']")
    assert text.index("How many orders are there?") < text.index("How many products are there?")
    assert text.count("Why this source?") == 2
    tab.screenshot(path=str(ARTIFACTS / "browser-two-questions.png"), full_page=True)
    tab.close()
