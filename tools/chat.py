"""A question inside a conversation: the earlier turns read, the follow-up made standalone, routed and answered
as any question, and the turn saved with its trace."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from llama_index.core.llms import LLM

from engines.answers.streaming import AnswerListener
from engines.conversation.condense import Condensed, Condenser
from engines.conversation.previous import PreviousTurn
from engines.conversation.store import ConversationStore, ConversationStoreError, check_conversation_id
from engines.feedback.store import Feedback, FeedbackStore
from engines.language import asked_as
from engines.models.llm import build_llm
from engines.routing.router import RagRouter, check_question
from engines.settings import Settings
from engines.trace import AskedInConversation, ConversationRecord, Trace
from engines.tracing.recorder import question as question_recording
from engines.tracing.recorder import span
from tools.feedback import Verdict, give_feedback, take_in


def condense_llm(settings: Settings, llm: LLM) -> LLM:
    """The model that condenses follow-ups: the answering model itself, whose kept prompt states bring the
    evaluated schema back after the condense prompt (a second context cost 1 GB or more of resident memory:
    docs/experiments/speed.md); without kept states, a second, small context of the same file, so the condense
    prompt does not evict the schema. An endpoint serves both."""
    if settings.llm_backend != "local" or not settings.condense or settings.prompt_states_mb > 0:
        return llm
    return build_llm(settings.model_copy(update={"context_window": settings.condense_context_window, "prompt_states_mb": 0}))


def previous_of(trace: Trace) -> PreviousTurn | None:
    """What a follow-up of `trace` builds on: its routed question, its source and the query as written (without
    the guard's row limit)."""
    if trace.route is None:
        return None
    sql = trace.sql_attempts[-1].sql if trace.sql_attempts and not trace.sql_attempts[-1].error else None
    return PreviousTurn(question=trace.standalone_question or trace.question, source=trace.route.chosen, sql=sql)


class Chat:
    """The router with a memory: `ask` takes a conversation id, and a history store that fails is a note, not a
    lost answer."""

    def __init__(self, router: RagRouter, store: ConversationStore, condenser: Condenser) -> None:
        self.router, self.store, self.condenser = router, store, condenser
        self.feedback = FeedbackStore(store)

    def give_feedback(self, trace_id: str, verdicts: list[Verdict], origin: str) -> list[Feedback | None]:
        """Store feedback on a kept answer and route and write SQL by it from the next question on."""
        sources = [t.source for t in self.router.tools]
        given = give_feedback(self.feedback, trace_id, verdicts, origin, sources, self.router.settings.sql_timeout_s)
        take_in(self.router, self.feedback)
        return given

    def ask(self, question: str, conversation_id: str | None, listener: AnswerListener | None = None, source: str | None = None) -> Trace:
        text = check_question(question, self.router.settings.max_question_chars)  # an empty follow-up is refused like any question
        notes: list[str] = []
        conversation_id, saved_turns, saved = self._open(conversation_id, notes)
        trace = self._answer(text, conversation_id, saved_turns, notes, listener, source)
        if saved:
            self._save(conversation_id, trace)
        return trace

    def ask_alone(self, question: str, listener: AnswerListener | None = None, source: str | None = None) -> Trace:
        """A question outside any conversation; its trace is kept, so feedback can find it."""
        return self._kept(self.router.ask(question, source, listener))

    def ask_after(self, question: str, history: list[Trace], listener: AnswerListener | None = None, source: str | None = None) -> Trace:
        """`question` as a follow-up of `history` (earlier turns a client sent with it, as an API request's
        messages): condensed and routed as in a stored conversation; no conversation is read or saved, the trace
        is kept."""
        text = check_question(question, self.router.settings.max_question_chars)
        return self._kept(self._answer(text, "", history, [], listener, source))  # id "": a history no store holds

    def _kept(self, trace: Trace) -> Trace:
        try:
            self.store.keep(trace)
        except ConversationStoreError as err:
            trace.notes.append(f"This answer's trace was not kept, so feedback cannot refer to it: {err}")
        return trace

    def _answer(
        self, text: str, conversation_id: str, saved_turns: list[Trace], notes: list[str], listener: AnswerListener | None, source: str | None
    ) -> Trace:
        turns = [t for t in saved_turns if not (t.conversation and t.conversation.cancelled)]
        with question_recording(text):  # one trace from the condense step to the answer
            condensed = self._condense(text, turns)
            if condensed.note:
                notes.append(condensed.note)
            if condensed.dropped_turns:
                notes.append(f"The {condensed.dropped_turns} oldest turns did not fit the history the condense step reads and were left out.")
            record = ConversationRecord(
                id=conversation_id,
                turn=len(saved_turns) + 1,
                follow_up=condensed.mark,
                rewritten=condensed.rewritten,
                dropped_turns=condensed.dropped_turns,
            )
            previous = previous_of(turns[-1]) if turns and condensed.mark else None
            with asked_as(text):  # a follow-up condensed into another language is answered in the one asked in
                return self.router.ask(condensed.question, source, listener, previous, AskedInConversation(question=text, record=record, notes=notes))

    def _condense(self, text: str, turns: list[Trace]) -> Condensed:
        if not self.router.settings.condense:
            return Condensed.as_asked(text)
        with span("condense", question=text, turns=len(turns)) as opened:
            condensed = self.condenser.condense(text, turns)
            opened.set(follow_up=condensed.mark, rewritten=condensed.rewritten)
            opened.output = condensed.question
        return condensed

    def save_cancelled(self, question: str, conversation_id: str) -> Trace:
        """Keep a question the person cancelled before it was answered, as a turn that says so."""
        trace = Trace(question=question, standalone_question=question, notes=["Cancelled before it was answered."])
        try:
            turn = len(self.store.turns(conversation_id)) + 1
            trace.conversation = ConversationRecord(id=conversation_id, turn=turn, cancelled=True)
            self.store.add_turn(conversation_id, trace)
        except ConversationStoreError as err:
            trace.notes.append(f"This turn was not saved: {err}")
        return trace

    def _open(self, conversation_id: str | None, notes: list[str]) -> tuple[str, list[Trace], bool]:
        """The conversation's id, its earlier turns, and whether the store works: a new conversation when none is
        named or the named one is unknown (said in the notes); no history (and a note) when the store fails."""
        wanted = check_conversation_id(conversation_id) if conversation_id is not None else uuid.uuid4().hex[:12]
        try:
            if conversation_id is None:
                return self.store.create(conversation_id=wanted), [], True
            if not self.store.exists(wanted):
                notes.append(f"There was no conversation '{wanted}'; a new one was started under that id.")
                return self.store.create(conversation_id=wanted), [], True
            return wanted, self.store.turns(wanted), True
        except ConversationStoreError as err:
            notes.append(f"Answered without the conversation's history, and this turn was not saved: {err}")
            return wanted, [], False

    def _save(self, conversation_id: str, trace: Trace) -> None:
        try:
            self.store.add_turn(conversation_id, trace)
        except ConversationStoreError as err:
            trace.notes.append(f"This turn was not saved: {err}")


def build_chat(router: RagRouter, load_condense_llm: Callable[[], LLM] | None = None) -> Chat:
    """The router with the store in the state folder and the condense step; `load_condense_llm` (default: a second
    context of the router's model) is called at the first follow-up."""
    settings = router.settings
    load = load_condense_llm or (lambda: condense_llm(settings, router.llm))
    chat = Chat(router, ConversationStore(settings.conversations_path), Condenser(load, settings.history_tokens))
    take_in(router, chat.feedback)  # what people corrected before, in the conversations database beside the turns
    return chat
