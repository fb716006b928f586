"""`ragrouter serve` as another app calls it: a real server on 127.0.0.1 with the real model, asked with the
official `openai` client and with LlamaIndex's `OpenAILike`; bad requests get JSON errors; keys are checked."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from engines.conversation.store import ConversationStore
from tests.ui.test_cli import SHOP, run
from tools.servers import free_port, running

KEY = "test-key-1234567890"


def _sources(folder: Path) -> Path:
    path = folder / "sources.yaml"
    path.write_text(f"sources:\n  - {{name: shop, kind: sql, path: '{SHOP}'}}\n  - {{name: web, kind: web}}\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The API with two keys set (module-wide: the model loads once)."""
    folder = tmp_path_factory.mktemp("api")
    # A small body limit: a body over it still fits the socket's buffers, so the client reads the 413 before its send fails.
    env = {**_env(folder), "RAGROUTER_API_KEYS": f"{KEY},another-key-0987654321", "RAGROUTER_API_MAX_BODY_BYTES": "20000"}
    port = free_port()
    command = [sys.executable, "-m", "ui.cli", "serve", "--port", str(port), "--sources", str(_sources(folder))]
    with running(command, f"http://127.0.0.1:{port}/docs", folder / "serve.log", env):
        yield f"http://127.0.0.1:{port}/v1", folder / "state"


def _env(folder: Path) -> dict[str, str]:
    import os

    return {**os.environ, "RAGROUTER_STATE_DIR": str(folder / "state"), "RAGROUTER_MILVUS_URI": str(folder / "state" / "milvus" / "api.db")}


def _client(base: str, key: str = KEY):  # noqa: ANN202
    from openai import OpenAI

    return OpenAI(base_url=base, api_key=key, max_retries=0, timeout=600)


def _post(base: str, body: dict | bytes, key: str | None = KEY) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(f"{base}/chat/completions", data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=600) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_openai_client_gets_the_answer_its_route_and_the_trace_id(served: tuple[str, Path]) -> None:
    base, _ = served
    client = _client(base)
    assert [m.id for m in client.models.list().data] == ["ragrouter", "ragrouter:shop", "ragrouter:web"]
    raw = client.chat.completions.with_raw_response.create(model="ragrouter", messages=[{"role": "user", "content": "How many orders are there?"}])
    answer = raw.parse()
    trace_id = raw.headers["x-ragrouter-trace-id"]
    assert answer.id == f"chatcmpl-{trace_id}" and len(trace_id) == 32
    message = answer.choices[0].message
    assert "60" in message.content and message.model_extra["reasoning_content"].startswith("Routed to shop")
    assert "SQL (1 row): `SELECT" in message.model_extra["reasoning_content"] and "- sql: " in message.model_extra["reasoning_content"]
    assert answer.usage.prompt_tokens > 0 and answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens


def test_a_stream_sends_each_piece_once_the_route_first_and_the_citations_last(served: tuple[str, Path]) -> None:
    base, _ = served
    chunks = list(
        _client(base).chat.completions.create(
            model="ragrouter:shop", messages=[{"role": "user", "content": "How many customers are older than 30?"}], stream=True
        )
    )
    deltas = [c.choices[0].delta for c in chunks]
    reasoning = [i for i, d in enumerate(deltas) if (d.model_extra or {}).get("reasoning_content")]
    content = [i for i, d in enumerate(deltas) if d.content]
    assert reasoning and content and reasoning[0] < content[0] and "source named by the user" in deltas[reasoning[0]].model_extra["reasoning_content"]
    assert "".join(deltas[i].content for i in content).strip() == "The answer is 7."
    told = "".join(deltas[i].model_extra["reasoning_content"] for i in reasoning)
    assert "SQL (1 row): `SELECT" in told and "- sql: " in told  # the query and its stage's time, before the answer
    assert chunks[-1].choices[0].finish_reason == "stop" and "annotations" in (deltas[-1].model_extra or {})
    assert len({c.id for c in chunks}) == 1


def test_a_named_conversation_keeps_its_turns_and_llamaindex_can_use_it_as_a_model(served: tuple[str, Path]) -> None:
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.openai_like import OpenAILike

    base, state = served
    client = _client(base)
    for question in ("How many customers are older than 30?", "And how many orders are there?"):
        client.chat.completions.create(model="ragrouter", messages=[{"role": "user", "content": question}], metadata={"conversation_id": "api-c1"})
    turns = ConversationStore(state / "conversations.sqlite").turns("api-c1")
    assert [t.conversation.turn for t in turns] == [1, 2] and turns[1].question == "And how many orders are there?"
    llm = OpenAILike(model="ragrouter", api_base=base, api_key=KEY, is_chat_model=True, timeout=600)
    assert "60" in llm.chat([ChatMessage(role="user", content="How many orders are there?")]).message.content


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"model": "ragrouter", "messages": [{"role": "user", "content": "  "}]}, 422, "the question is empty"),
        ({"model": "ragrouter", "messages": [{"role": "user", "content": "x" * 5000}]}, 422, "the limit is"),
        ({"model": "ragrouter", "messages": [{"role": "assistant", "content": "hi"}]}, 422, "the last message must be the user's question"),
        ({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, 422, "unknown model 'gpt-4o'"),
        ({"model": "ragrouter:nope", "messages": [{"role": "user", "content": "hi"}]}, 422, "unknown source 'nope'"),
        ({"model": "ragrouter", "messages": []}, 422, "messages"),
        (
            {"model": "ragrouter", "messages": [{"role": "user", "content": "hi"}], "metadata": {"conversation_id": "../x"}},
            422,
            "not a conversation id",
        ),
        (b"{not json", 422, "the request is not valid"),
        (b"x" * 40_000, 413, "over 20,000 bytes"),
    ],
)
def test_a_bad_request_is_a_json_error_saying_what_to_fix(served: tuple[str, Path], body, status: int, message: str) -> None:
    code, reply = _post(served[0], body)
    assert code == status and message in reply["error"]["message"], reply


@pytest.mark.parametrize("key", [None, "wrong-key"])
def test_a_missing_or_wrong_key_is_401(served: tuple[str, Path], key: str | None) -> None:
    code, reply = _post(served[0], {"model": "ragrouter", "messages": [{"role": "user", "content": "How many orders are there?"}]}, key)
    assert code == 401 and "RAGROUTER_API_KEYS" in reply["error"]["message"] and "wrong-key" not in json.dumps(reply)


def test_serving_beyond_this_machine_without_keys_is_refused(tmp_path: Path) -> None:
    result = run({**_env(tmp_path), "RAGROUTER_API_KEYS": ""}, "serve", "--host", "0.0.0.0", "--port", str(free_port()))
    assert result.returncode == 2 and "RAGROUTER_API_KEYS" in result.stderr
    assert not (tmp_path / "state").exists()  # refused before anything loaded


@pytest.mark.slow
def test_without_keys_the_local_api_needs_none(tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "ui.cli", "serve", "--port", str(port), "--sources", str(_sources(tmp_path))]
    with running(command, f"http://127.0.0.1:{port}/docs", tmp_path / "serve.log", {**_env(tmp_path), "RAGROUTER_API_KEYS": ""}):
        code, reply = _post(
            f"http://127.0.0.1:{port}/v1", {"model": "ragrouter:shop", "messages": [{"role": "user", "content": "How many orders?"}]}, None
        )
    assert code == 200 and reply["choices"][0]["message"]["content"]


def _events(base: str, body: dict) -> list[tuple[int, str, dict]]:
    """The native stream's events as (id, event, data)."""
    import httpx

    found, fields = [], {}
    with httpx.stream("POST", f"{base}/ask", json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as reply:
        assert reply.status_code == 200, reply.read()
        for line in reply.iter_lines():
            if not line:
                found.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
                fields = {}
            else:
                key, _, value = line.partition(": ")
                fields[key] = value
    return found


def test_the_native_stream_tells_every_step_in_order_and_ends_with_the_trace_ask_json_prints(served: tuple[str, Path], tmp_path: Path) -> None:
    base, _ = served
    question = "How many customers are older than 30?"
    found = _events(base, {"question": question})
    kinds = [kind for _, kind, _ in found]
    assert [n for n, _, _ in found] == list(range(1, len(found) + 1))
    assert kinds[0] == "meta" and kinds[-2:] == ["trace", "done"]
    assert kinds.index("route") < kinds.index("sql") < kinds.index("rows") < kinds.index("token")
    stages = [(data["name"], data["phase"]) for _, kind, data in found if kind == "stage"]
    assert ("route", "start") in stages and ("route", "end") in stages and ("sql", "end") in stages
    route = next(data for _, kind, data in found if kind == "route")
    assert route["chosen"] == "shop" and {c["name"] for c in route["candidates"]} == {"shop", "web"}
    trace = found[-2][2]
    assert trace["trace_id"] == found[0][2]["trace_id"] and "".join(d["text"] for _, k, d in found if k == "token").strip() == trace["answer"]
    cli = run({**_env(tmp_path)}, "ask", question, "--json", "--sources", str(_sources(tmp_path)))
    printed = json.loads(cli.stdout)
    assert set(printed) == set(trace) and (printed["answer"], printed["sql"], printed["route"]["chosen"]) == (trace["answer"], trace["sql"], "shop")


def test_stored_traces_and_conversations_are_read_renamed_and_deleted(served: tuple[str, Path]) -> None:
    import httpx

    base, _ = served
    auth = {"Authorization": f"Bearer {KEY}"}
    found = _events(base, {"question": "How many orders are there?", "conversation_id": "api-c2"})
    trace_id = found[0][2]["trace_id"]
    with httpx.Client(base_url=base, headers=auth, timeout=60) as client:
        assert client.get(f"/traces/{trace_id}").json()["trace_id"] == trace_id
        assert "api-c2" in [c["id"] for c in client.get("/conversations").json()["data"]]
        assert client.patch("/conversations/api-c2", json={"title": "Orders"}).status_code == 200
        assert client.get("/conversations/api-c2").json()["turns"][0]["trace_id"] == trace_id
        assert client.delete("/conversations/api-c2").json()["deleted"] is True
        assert client.get("/conversations/api-c2").status_code == 404
        assert client.get(f"/traces/{'0' * 32}").status_code == 404 and client.get("/traces/not-an-id").status_code == 422
        assert client.patch("/conversations/api-c9", json={"title": "x"}).status_code == 404
        assert client.post("/ask", json={"question": " "}).status_code == 422


def test_on_the_local_model_a_second_question_is_told_it_waits_then_answered(served: tuple[str, Path]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    base, _ = served
    questions = [
        {"question": "How many orders are there?", "source": "shop"},
        {"question": "How many customers are older than 30?", "source": "shop"},
    ]
    with ThreadPoolExecutor(2) as pool:
        streams = list(pool.map(lambda body: _events(base, body), questions))
    kinds = [[kind for _, kind, _ in found] for found in streams]
    assert all(k[-2:] == ["trace", "done"] for k in kinds)
    waited = [found for found in streams if found[0][1] == "queued"]
    assert len(waited) == 1 and waited[0][0][2] == {"position": 1} and waited[0][1][1] == "meta"


def _route_of(base: str, question: str) -> tuple[str, str]:
    """Where the native stream says `question` goes, and its trace id; the stream is left as soon as it says so."""
    import httpx

    fields: dict[str, str] = {}
    with httpx.stream("POST", f"{base}/ask", json={"question": question}, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as reply:
        for line in reply.iter_lines():
            key, _, value = line.partition(": ")
            fields[key] = value
            if key == "data" and fields.get("event") == "meta":
                trace_id = json.loads(value)["trace_id"]
            if key == "data" and fields.get("event") == "route":
                return json.loads(value)["chosen"], trace_id
    raise AssertionError("the stream ended without a route")


def test_feedback_through_the_api_and_the_cli_is_taken_in_and_exported_as_cases_eval_reads(served: tuple[str, Path], tmp_path: Path) -> None:
    import httpx

    base, state = served
    question = "Which customers live in Shanghai?"
    status, reply = _post(base, {"model": "ragrouter", "messages": [{"role": "user", "content": question}]})
    trace_id = reply["id"].removeprefix("chatcmpl-")
    assert status == 200 and reply["choices"][0]["message"]["content"]
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as client:
        assert client.get(f"/traces/{trace_id}").json()["route"]["chosen"] == "shop"  # an answer outside any conversation is kept
        moved = client.post("/feedback", json={"trace_id": trace_id, "aspect": "route", "rating": "down", "correction": "web"})
        assert moved.status_code == 200 and moved.json()["feedback"]["correction"] == "web"
        assert _route_of(base, question)[0] == "web"  # the running router took the correction in
        assert client.post("/feedback", json={"trace_id": trace_id, "aspect": "sql", "rating": "up"}).status_code == 200
        for body, status_code, message in [
            ({"trace_id": "0" * 32, "rating": "up"}, 404, "no kept answer"),
            ({"trace_id": "xyz", "rating": "up"}, 422, "not a trace id"),
            ({"trace_id": trace_id, "aspect": "tone", "rating": "up"}, 422, "aspect"),
            ({"trace_id": trace_id, "aspect": "route", "correction": "nowhere"}, 422, "not a source"),
            ({"trace_id": trace_id, "aspect": "sql", "correction": "DELETE FROM customers"}, 422, "not kept"),
        ]:
            refused = client.post("/feedback", json=body)
            assert refused.status_code == status_code and message in refused.json()["error"]["message"], refused.text
    other = _events(base, {"question": "How many orders are there?"})[0][2]["trace_id"]
    env = {**_env(state.parent), "RAGROUTER_STATE_DIR": str(state)}
    sources = str(_sources(tmp_path))
    assert run(env, "feedback", other, "down", "--comment", "too short", "--sources", sources).returncode == 0
    unknown = run(env, "feedback", "f" * 32, "up", "--sources", sources)
    assert unknown.returncode == 2 and "no kept answer" in unknown.stderr
    out = tmp_path / "cases"
    assert run(env, "feedback", "export", "--out", str(out)).returncode == 0
    read = {
        name: [json.loads(line) for line in (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()] for name in ("router", "sql", "triage")
    }
    assert read["router"] == [{"question": question, "expected_source": "web", "group": "feedback"}]
    assert read["sql"][0]["db"] == "shop" and "Shanghai" in read["sql"][0]["gold_sql"]
    assert [(t["trace_id"], t["comment"]) for t in read["triage"]] == [(other, "too short")]
    report = tmp_path / "report"
    evaluated = run(_env(tmp_path), "eval", "router", "--questions", str(out / "router.jsonl"), "--sources", sources, "--out", str(report))
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads((report / "report.json").read_text(encoding="utf-8"))["n"] == 1
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as client:
        taken_back = client.post("/feedback", json={"trace_id": trace_id, "aspect": "route", "rating": None})
        assert taken_back.json()["feedback"] is None and _route_of(base, question)[0] == "shop"


def test_a_client_that_goes_away_mid_answer_stops_it_and_the_next_question_is_answered(served: tuple[str, Path]) -> None:
    import httpx

    base, _ = served
    auth = {"Authorization": f"Bearer {KEY}"}
    body = {"question": "List every customer with their city and age.", "conversation_id": "api-left", "source": "shop"}
    with httpx.stream("POST", f"{base}/ask", json=body, headers=auth, timeout=600) as reply:
        for line in reply.iter_lines():
            if line == "event: token":
                break  # the client goes away at the first piece of the answer
    assert _events(base, {"question": "How many orders are there?", "source": "shop"})[-2][1] == "trace"
    with httpx.Client(base_url=base, headers=auth, timeout=60) as client:
        assert client.get("/conversations/api-left").json()["turns"] == []  # stopped, so never saved as answered
