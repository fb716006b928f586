"""ragrouter chat: ask a question, see which source answered and why."""

import re
import resource
import uuid

import pandas as pd
import streamlit as st

from engines.conversation.store import ConversationStoreError
from engines.feedback.cases import triage
from engines.routing.router import QuestionError, check_question
from engines.settings import Settings
from engines.trace import MetadataRecord, SqlAttempt, Trace
from tools.build import built, built_sources
from tools.chat import Chat
from tools.examples import example_questions
from tools.feedback import FeedbackError, UnknownTraceError, Verdict
from tools.question_queue import Job, JobState
from ui.charts import result_chart, route_chart, stage_chart
from ui.cli import USER_ERRORS
from ui.passages import highlighted, kept_sentences, passage_facts
from ui.resources import load_chat, load_models, load_queue, load_router, sources_stamp

st.set_page_config(page_title="ragrouter", page_icon="🧭", layout="wide")
# How answers cite: "[2]" as the prompt asks, or "Source 2" after the passages' own "Source 2:" labels.
CITATION = re.compile(r"\[(\d+)\]|\bSource (\d+)\b")


def settings_sidebar(current: Settings) -> None:
    """The settings a demo changes most, applied by building (once) a router with them."""
    with st.form("settings"):
        selector = st.radio("Selector", ["embedding", "llm"], index=["embedding", "llm"].index(current.selector), horizontal=True)
        crag = st.toggle("Corrective RAG on the documents path", value=current.crag)
        lower, upper = st.slider("CRAG bands: rewrite from, answer from", 0.0, 10.0, (current.crag_lower, current.crag_upper), 0.5)
        support = st.slider("CRAG answer check: a draft passes from", 0.0, 1.0, current.crag_answer_support, 0.05)
        ambiguous = st.slider("CRAG answer check below the high band: from at least", 0.0, 1.0, current.crag_ambiguous_support, 0.05)
        reranks = ["auto", "on", "off", "llm"]
        rerank = st.radio("Rerank", reranks, index=reranks.index(current.rerank), horizontal=True)
        compressions = ["embedding", "llm_extract", "llm_filter", "off"]
        compress = st.radio("Compress passages", compressions, index=compressions.index(current.compress), horizontal=True)
        metadata = st.toggle("Sort and filter by document metadata", value=current.metadata_instructions)
        candidates = st.slider("SQL queries written to vote on (1: the SQL file continued, greedily, only)", 1, 5, current.sql_candidates)
        if st.form_submit_button("Apply"):
            chosen = {
                "selector": selector,
                "crag": crag,
                "crag_lower": lower,
                "crag_upper": upper,
                "crag_answer_support": support,
                "crag_ambiguous_support": ambiguous,
                "rerank": rerank,
                "compress": compress,
                "metadata_instructions": metadata,
                "sql_candidates": candidates,
            }
            st.session_state.overrides = tuple(sorted(chosen.items()))
            st.rerun()


def compare_selectors(index: int, trace: Trace) -> None:
    """Route the same question with every selector, side by side (routing only: nothing is answered again)."""
    if not st.toggle("Compare selectors", key=f"compare-{index}"):
        return
    with lock:
        routes = router.routes_by_selector(trace.question)
    for column, (name, (route, ms)) in zip(st.columns(len(routes)), routes.items()):
        column.markdown(f"**{name}** → **{route.chosen}** ({ms:,.0f} ms)")
        column.caption(route.reason)


def give(trace: Trace, verdict: Verdict) -> bool:
    """Keep feedback on `trace` (the router and SQL knowledge take it in at once); say so when it cannot be kept."""
    try:
        with lock:  # the router's corrections and the SQL knowledge change between questions, not during one
            chat.give_feedback(trace.trace_id, [verdict], "app")
    except (FeedbackError, UnknownTraceError, ConversationStoreError) as err:
        st.error(f"Not saved: {err}")
        return False
    return True


def rated(trace: Trace, key: str) -> None:
    """The thumbs changed: keep the new rating (none: take it back)."""
    thumbs = st.session_state[key]
    give(trace, Verdict("answer", None if thumbs is None else ("up" if thumbs else "down")))


def answer_feedback(index: int, trace: Trace) -> None:
    """👍/👎 under the answer; a 👎 asks which source should have answered; SQL answers take "this SQL is right" or
    a corrected SQL. All of it is kept with the trace (`ragrouter feedback export` makes regression cases of it)."""
    if not trace.trace_id or trace.route is None:
        return
    try:
        stored = {f.aspect: f for f in chat.feedback.of_trace(trace.trace_id)}
    except ConversationStoreError:  # the page says the store cannot be used; the thumbs start empty
        stored = {}
    earlier = stored["answer"].rating if "answer" in stored else None
    key = f"rate-{index}"
    thumbs = st.feedback("thumbs", key=key, default=None if earlier is None else int(earlier > 0), on_change=rated, args=(trace, key))
    if thumbs == 0:
        others = [t.source.name for t in router.tools if t.source.name != trace.route.chosen]
        right = st.selectbox(
            f"Wrong source? It went to {trace.route.chosen}; which one should have answered?", others, index=None, key=f"source-{index}"
        )
        if right and st.button("Save the right source", key=f"save-source-{index}") and give(trace, Verdict("route", "down", right)):
            st.success(f"Saved: questions like this one now go to {right}.")
    if trace.sql_attempts and built(router, trace.route.chosen).knowledge is not None:
        sql_feedback(index, trace)


def sql_feedback(index: int, trace: Trace) -> None:
    """Keep this question with its SQL, as written or as corrected, as an example in the SQL knowledge base."""
    if st.button("This SQL is right", key=f"right-{index}") and give(trace, Verdict("sql", "up")):
        st.success("Saved: similar questions will see it as an example.")
    with st.expander("Correct this SQL"):
        corrected = st.text_area("Corrected SQL", value=trace.sql_attempts[-1].sql, key=f"fix-{index}")
        if st.button("Save the corrected SQL", key=f"save-{index}") and give(trace, Verdict("sql", "down", corrected)):
            st.success("Saved: similar questions will see it as an example.")


def triage_sidebar() -> None:
    """Answers rated 👎 with nothing said about what was right: for someone to look into."""
    try:
        waiting = triage(chat.feedback.all())
    except ConversationStoreError:
        return  # the conversations sidebar already says the store cannot be read
    if waiting:
        with st.expander(f"Feedback to look into ({len(waiting)})"):
            for item in reversed(waiting[-20:]):
                st.markdown(f"**{item['question']}** → {item['source']}")
                st.caption(f"{item['aspect']} 👎" + (f": {item['comment']}" if item["comment"] else "") + f" · trace {item['trace_id']}")


def sql_attempt(n: int, attempt: SqlAttempt) -> None:
    """One attempt: how it ended, how it won the vote when several queries were written, what was fixed."""
    st.markdown(f"**{n}.** " + (f"failed ({attempt.kind}): {attempt.error}" if attempt.error else "ran"))
    if attempt.written > 1:
        st.caption(f"{attempt.votes} of the {attempt.written} queries written returned these rows; the others lost the vote.")
    if attempt.fixes:
        st.caption("Fixed before it ran: " + "; ".join(attempt.fixes))
    st.code(attempt.sql or "(no SQL)", language="sql")
    for other in attempt.others:
        st.code(f"-- lost the vote\n{other}", language="sql")


def citations(trace: Trace) -> None:
    """Each passage the answer cites, as a button that opens it (and a link to its page, for the web's)."""
    numbers = {int(a or b) for a, b in CITATION.findall(trace.answer)}
    cited = sorted(n for n in numbers if 1 <= n <= len(trace.passages))
    for column, n in zip(st.columns(max(len(cited), 1)), cited):
        passage = trace.passages[n - 1]
        with column.popover(f"[{n}] {passage.id}"[:40]):
            st.caption(f"Cited passage [{n}] · {passage.source}" + passage_facts(passage))
            if passage.url:
                st.markdown(f"[Open the page]({passage.url})")
            st.text(passage.text)


def why_not(index: int, trace: Trace) -> None:
    """Each other source as the router saw it: its score, the gap to the winner, and its description."""
    others = [c for c in trace.route.candidates if c.name != trace.route.chosen]
    if not others:
        return
    best = trace.route.candidates[0].score
    name = st.selectbox("Why not…", [c.name for c in others], key=f"why-not-{index}")
    score = next(c.score for c in others if c.name == name)
    st.markdown(f"**{name}** scored {score:.3f}, {best - score:.3f} below **{trace.route.chosen}**. What the router read about it:")
    st.caption(router.tool(name).tool.metadata.description)


def metadata_instruction(record: MetadataRecord) -> None:
    """The model's instruction, the Milvus filter it became and the documents it put first, with their values."""
    with st.expander(f"Metadata instruction: {record.matched} document{'s' * (record.matched != 1)} matched", expanded=True):
        st.json(record.instruction, expanded=False)
        st.caption(
            f"Milvus filter: `{record.expression or '(none: every document)'}`"
            + (f" · {record.unsorted} without the sort field, set aside" if record.unsorted else "")
        )
        if record.documents:
            st.dataframe(pd.DataFrame(record.documents), use_container_width=True, hide_index=True)


def show_trace(index: int, trace: Trace) -> None:
    citations(trace)
    route = trace.route
    first = f" · first words after {trace.timings_ms['first_token'] / 1000:.1f} s" if "first_token" in trace.timings_ms else ""
    st.caption(f"Answered from **{route.chosen}** · {route.selector} selector · {trace.timings_ms.get('total', 0) / 1000:.1f} s{first}")
    with st.expander("Why this source?", expanded=False):
        if trace.standalone_question and trace.standalone_question != trace.question:
            st.caption(f"A follow-up, routed as the question it stands for: “{trace.standalone_question}”.")
        if route.kept_previous:
            st.caption("The router kept the previous turn's source for this follow-up.")
        st.write(route.reason)
        if route.candidates:
            runner_up = route.candidates[1] if len(route.candidates) > 1 else None
            if runner_up:
                st.caption(f"Margin to the runner-up, {runner_up.name}: {route.candidates[0].score - runner_up.score:.3f}")
            st.altair_chart(route_chart(trace), use_container_width=True)
            why_not(index, trace)
            compare_selectors(index, trace)
        read = sum(c.prompt_tokens_evaluated for c in trace.model_calls)
        reused = sum(c.prompt_tokens_reused for c in trace.model_calls)
        tokens = f" · {read:,} prompt tokens read, {reused:,} reused" if trace.model_calls else ""
        st.markdown(f"**Where the time went** · {trace.llm_calls} LLM call{'s' * (trace.llm_calls != 1)}{tokens}")
        st.altair_chart(stage_chart(trace), use_container_width=True)
        if trace.trace_id:  # turns saved before traces had ids have none
            # Copyable: the same id finds this question's spans in Phoenix or any OpenTelemetry backend (RAGROUTER_OTEL).
            st.caption("Trace id")
            st.code(trace.trace_id, language=None)
    if trace.sql:
        st.code(trace.sql, language="sql")
        st.dataframe(pd.DataFrame(trace.rows, columns=trace.columns or None), use_container_width=True)
        if (chart := result_chart(trace)) is not None:
            st.altair_chart(chart, use_container_width=True)
        if len(trace.sql_attempts) > 1 or any(a.fixes or a.written > 1 for a in trace.sql_attempts):
            with st.expander(f"SQL attempts ({len(trace.sql_attempts)})"):
                for n, attempt in enumerate(trace.sql_attempts, 1):
                    sql_attempt(n, attempt)
    if trace.metadata_query:
        metadata_instruction(trace.metadata_query)
    if trace.crag:
        crag = trace.crag
        with st.expander(f"Corrective RAG: confidence {crag.confidence:.1f}/10 ({crag.band}) · answer {crag.verification}"):
            st.markdown(" → ".join(crag.actions))
            cells = [{k: v if isinstance(v, (int, float, type(None))) else str(v) for k, v in step.items()} for step in crag.steps]
            st.dataframe(pd.DataFrame(cells), use_container_width=True)
    if trace.passages:
        with st.expander(f"Passages used ({len(trace.passages)})"):
            for i, p in enumerate(trace.passages, 1):
                st.markdown(f"**[{i}] {p.source} / {p.url or p.id}**" + passage_facts(p))
                if sentences := kept_sentences(p):
                    st.caption("The passage as retrieved: compression kept the highlighted sentences.")
                    st.markdown(highlighted(sentences))
                else:
                    st.text(p.text)
    for note in trace.notes:
        st.warning(note)
    if trace.web_error:
        with st.expander("Why web search failed"):
            st.code(trace.web_error, language=None)


def asked_as(trace: Trace) -> None:
    """The question routed, where the follow-up was rewritten to stand alone, and why it was taken as a follow-up."""
    conversation = trace.conversation
    if trace.standalone_question and trace.standalone_question != trace.question:
        st.markdown(f"**Asked as:** {trace.standalone_question}")
    if conversation and conversation.follow_up:
        how = "rewritten with the earlier turns" if conversation.rewritten else "left as asked"
        st.caption(f"Taken as a follow-up ({conversation.follow_up}): {how}.")


def show_answer(index: int, trace: Trace) -> None:
    if trace.conversation and trace.conversation.cancelled:
        st.caption("Cancelled before it was answered.")
        return
    asked_as(trace)
    st.write(trace.answer)
    show_trace(index, trace)
    answer_feedback(index, trace)


def show_turn(index: int, trace: Trace) -> None:
    st.chat_message("user").write(trace.question)
    with st.chat_message("assistant"):
        show_answer(index, trace)


def conversation_for_question(current: str | None) -> str:
    """The conversation a question sent now joins: the open one, or one made now (and put in the address), so a
    second question sent before the first is answered follows it in the same conversation."""
    if current:
        return current
    try:
        current = chat.store.create()
    except ConversationStoreError:  # the answer says the history could not be used; the question still goes
        current = uuid.uuid4().hex[:12]
    st.query_params["c"] = st.session_state.conversation = current
    return current


def show_streamed(slot, job: Job) -> None:
    """What the model has written of `job` so far: the SQL path's rows first, then the text."""
    with slot.container():
        if job.ran:
            sql, columns, rows = job.ran
            st.code(sql, language="sql")
            st.dataframe(pd.DataFrame(rows, columns=columns or None), use_container_width=True)
        if job.text:
            st.markdown(job.text + " ▌")


STATUS = {
    JobState.WAITING: "Waiting in line: answered after the questions sent before it.",
    JobState.ANSWERING: "Routing and answering…",
    JobState.CANCELLED: "Cancelled: kept in the conversation as cancelled once the questions before it are answered.",
}


def show_jobs(jobs: list[Job], first_index: int) -> None:
    """Questions sent and not yet saved: each shown at once (a waiting one can be cancelled), then waited on in
    the order sent, its answer drawn as it is written. A new question from this tab stops this run, not the jobs."""
    drawn = []
    for job in jobs:
        st.chat_message("user").write(job.question)
        box = st.chat_message("assistant")
        with box:
            status, slot = st.empty(), st.empty()
            if job.state is JobState.WAITING and st.button("Cancel this question", key=f"cancel-{id(job)}", icon=":material/close:"):
                queue.cancel(job)
        drawn.append((job, box, status, slot))
    for n, (job, box, status, slot) in enumerate(drawn):
        shown = None
        while not job.finished.wait(0.25):
            # Drawn at every tick: a Streamlit run hears of a new question from its tab only when it draws.
            status.info(STATUS[job.state])
            if (now := (len(job.text), job.ran is not None)) != shown:
                show_streamed(slot, job)
                shown = now
        status.empty()
        slot.empty()
        with box:
            if job.state is JobState.FAILED:
                st.error(job.error)
            else:
                show_answer(first_index + n, job.trace)


def open_conversation(conversation_id: str | None) -> None:
    """Show `conversation_id` (None: a new chat), in this session and in the address."""
    st.query_params.clear()
    st.session_state.conversation = conversation_id
    if conversation_id:
        st.query_params["c"] = conversation_id
    st.rerun()


def conversations_sidebar(chat: Chat, current: str | None) -> None:
    """Past conversations, newest first: open one, start a new one, rename or delete the open one."""
    st.header("Conversations")
    if st.button("New chat", icon=":material/add:", use_container_width=True):
        open_conversation(None)
    try:
        found = chat.store.recent()
    except ConversationStoreError as err:
        st.error(str(err))
        return
    for summary in found[:30]:
        kind = "primary" if summary.id == current else "secondary"
        if st.button(summary.title, key=f"open-{summary.id}", type=kind, use_container_width=True):
            open_conversation(summary.id)
    if current and any(c.id == current for c in found):
        with st.expander("This conversation"):
            title = st.text_input("Title", value=next(c.title for c in found if c.id == current))
            if st.button("Rename"):
                chat.store.rename(current, title)
                st.rerun()
            if st.button("Delete this conversation", type="primary"):
                chat.store.delete(current)
                open_conversation(None)


def settings_table(s: Settings) -> None:
    model = s.llm_backend if s.llm_backend != "local" else s.model_path.name
    rows = {
        "Model": model,
        "Embeddings": s.embed_model,
        "Web search": s.web_backend,
        "Selector": s.selector,
        "Corrective RAG": "on" if s.crag else "off",
    }
    st.table(pd.DataFrame({"setting": list(rows), "value": list(rows.values())}).set_index("setting"))


def start_page(examples: list[str]) -> str | None:
    """What a first visit shows: what to ask, with one example per kind of source; the one clicked, if any."""
    st.markdown("#### Ask your first question")
    st.caption("Each example goes to a different kind of source; follow-ups like “what about Beijing?” or “按城市统计呢？” know what came before.")
    for column, example in zip(st.columns(max(len(examples), 1)), examples):
        if column.button(example, use_container_width=True):
            return example
    return None


st.title("🧭 ragrouter")
st.write("Ask in English or Chinese; the router picks the documents, the database or the web, and shows why.")

try:
    _, _, lock = load_models()
    router = load_router(st.session_state.get("overrides", ()), sources_stamp(Settings()))
    chat = load_chat(router)
    queue = load_queue()
except USER_ERRORS as err:
    st.error(str(err))
    st.stop()

# The address holds the open conversation (a reload reopens it); the session too, for a rerun that has no address.
conversation_id = st.query_params.get("c") or st.session_state.get("conversation")
try:
    turns = chat.store.turns(conversation_id) if conversation_id else []
except ConversationStoreError as err:
    st.error(f"{err}. Questions are still answered, without the earlier turns.")
    turns = []

with st.sidebar:
    conversations_sidebar(chat, conversation_id)
    triage_sidebar()
    st.header("Sources")
    for tool in router.tools:
        st.markdown(f"**{tool.source.name}** ({tool.source.kind})")
        st.caption(tool.tool.metadata.description[:300])
    st.header("Settings")
    settings_table(router.settings)
    # Linux reports the peak resident size in KiB: what the model, embeddings and Milvus Lite client hold.
    st.caption(f"Memory of this process (peak): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2:.1f} GiB")
    settings_sidebar(router.settings)

for index, trace in enumerate(turns):
    show_turn(index, trace)

clicked = start_page(example_questions(built_sources(router))) if not turns else None
if question := st.chat_input("Ask a question…") or clicked:
    try:
        text = check_question(question, router.settings.max_question_chars)
    except QuestionError as err:
        st.error(str(err))
    else:
        conversation_id = conversation_for_question(conversation_id)
        queue.submit(chat, conversation_id, text, USER_ERRORS)
show_jobs(queue.unsaved(conversation_id, len(turns)), len(turns))
