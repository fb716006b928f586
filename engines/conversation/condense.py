"""The condense step: a follow-up and the turns before it, rewritten by the model as one standalone question.

It is the condense step of LlamaIndex's CondenseQuestionChatEngine (its ChatMemoryBuffer keeps the newest turns
that fit, `messages_to_history_str` writes them), with a prompt of our own: the stock one rewrote every
follow-up of 25 SParC dialogues and changed about a third of them (a wrong referent, a dropped condition, another
question type). This one shows each earlier turn's source and SQL, asks for the follow-up's own words kept, and
has worked examples in English and Chinese; a rewrite that repeats an earlier question or grows past all
reason is not taken.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from llama_index.core import PromptTemplate
from llama_index.core.base.llms.generic_utils import messages_to_history_str
from llama_index.core.llms import LLM, ChatMessage
from llama_index.core.memory import ChatMemoryBuffer

from engines.conversation.referent import find_referent, pointer_in, put_back
from engines.conversation.standalone import follow_up_mark
from engines.language import has_chinese
from engines.trace import Trace

CONDENSE = PromptTemplate(
    "Rewrite the last question of a conversation so that it can be understood without the conversation.\n"
    "Keep the last question's own words, its kind of question and every condition it adds; replace words such as "
    "'it', 'them', 'those', 'what about', '呢', '他们' with what they refer to, and carry over the earlier "
    "question's conditions that still apply. If it starts a new topic, repeat it unchanged. "
    "Write in the language of the last question. Answer with the rewritten question only.\n\n"
    "Conversation:\nuser: How many customers are older than 30?\nassistant: (from shop, SQL: SELECT count(*) FROM customers WHERE age > 30) 7\n"
    "Last question: What about Beijing?\nRewritten: How many customers in Beijing are older than 30?\n\n"
    "Conversation:\nuser: List the countries in Europe.\nassistant: (from world, SQL: SELECT name FROM country WHERE continent = 'Europe')\n"
    "Last question: Sort them by population.\nRewritten: List the countries in Europe sorted by population.\n\n"
    "Conversation:\nuser: 员工每年有几天年假？\nassistant: (from handbook) 每年15天。\n"
    "Last question: 工作五年以后呢？\nRewritten: 员工工作五年以后每年有几天年假？\n\n"
    "Conversation:\nuser: 鲁迅是哪里人？\nassistant: (from articles) 浙江绍兴人。\n"
    "Last question: 他的原名是什么？\nRewritten: 鲁迅的原名是什么？\n\n"
    "Conversation:\nuser: 长江全长多少公里？\nassistant: (from articles) 约6300公里。\n"
    "Last question: 该河流经哪些省份？\nRewritten: 长江流经哪些省份？\n\n"
    "Conversation:\nuser: Which airlines fly from APG?\nassistant: (from flights, SQL: SELECT airline FROM flights WHERE source = 'APG')\n"
    "Last question: 它们来自哪个国家？\nRewritten: 从APG出发的航空公司来自哪个国家？\n\n"
    "Conversation:\nuser: What is the weather in Paris today?\nassistant: (from web, no answer)\n"
    "Last question: And for London?\nRewritten: What is the weather in London today?\n\n"
    "Conversation:\nuser: How many singers are there?\nassistant: (from concerts, SQL: SELECT count(*) FROM singer) 6\n"
    "Last question: Now tell me about the weather in Berlin.\nRewritten: Now tell me about the weather in Berlin.\n\n"
    "Conversation:\n{chat_history}\nLast question: {question}\nRewritten{language}:"
)
# The 1.5B model rewrites a Chinese follow-up in English when the turns before it show English SQL, and there it
# helps: the query is written in the database's words (and the answer in the asked language, engines/language.py).
# After any other turn a cue keeps it to the question's language, and a rewrite in another is not taken.
CHINESE_CUE = " (in Chinese)"
QUESTION = re.compile(r"[?？]|什么|哪|谁|几|多少|吗|怎|如何|为何|何时|\b(what|which|who|whom|whose|when|where|why|how)\b", re.I)
STOP = ["\n"]
MAX_GROWTH_WORDS = 40  # a rewrite this much longer than the question and the last turn together is the model rambling


@dataclass
class Condensed:
    question: str  # the standalone question: the one routed
    mark: str | None  # why the cheap check took the question for a follow-up; None: it stands alone
    rewritten: bool
    dropped_turns: int  # earlier turns left out because the history would not fit
    note: str | None = None  # why a rewrite was not taken

    @classmethod
    def as_asked(cls, question: str) -> Condensed:
        """A question that stands alone (or a first one): routed as asked, with no model call."""
        return cls(question, None, False, 0)


def turn_messages(turns: list[Trace]) -> list[ChatMessage]:
    """Each earlier turn as the condense prompt reads it: the question as routed, then its source, SQL and answer."""
    messages = []
    for turn in turns:
        used = turn.route.chosen if turn.route else "no source"
        sql = f", SQL: {turn.sql}" if turn.sql else ""
        # A turn with no answer still says what was asked; its refusal text would only distract the rewrite.
        answer = "" if turn.web_unavailable or turn.declined else " ".join(turn.answer.split())[:200]
        used += "" if answer or turn.sql else ", no answer"
        messages += [
            ChatMessage(role="user", content=turn.standalone_question or turn.question),
            ChatMessage(role="assistant", content=f"(from {used}{sql}) {answer}".strip()),
        ]
    return messages


def _words(text: str) -> int:
    return len(re.findall(r"\w+", text))


class Condenser:
    """Turns a question in a conversation into the question to route. `load_llm` gives the model, loaded at the
    first follow-up: it may be a second context of the local model (tools/chat.py), so the condense call does not
    evict the prompt prefix the answering model keeps."""

    def __init__(self, load_llm: Callable[[], LLM], history_tokens: int) -> None:
        self.load_llm, self.history_tokens = load_llm, history_tokens
        self._llm: LLM | None = None

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            self._llm = self.load_llm()
        return self._llm

    def condense(self, question: str, turns: list[Trace]) -> Condensed:
        mark = follow_up_mark(question) if turns else None
        if mark is None:
            return Condensed.as_asked(question)
        pointer = pointer_in(question) if has_chinese(question) else None
        # One thing pointed back at: found in the last question, not the whole rewritten.
        if pointer is not None and (referent := find_referent(self.llm, question, turns[-1].standalone_question or turns[-1].question)):
            return Condensed(put_back(question, pointer, referent), mark, True, 0)
        messages = turn_messages(turns)
        memory = ChatMemoryBuffer.from_defaults(chat_history=messages, token_limit=self.history_tokens)
        kept = memory.get()
        dropped = (len(messages) - len(kept)) // 2
        history = messages_to_history_str(kept)
        cue = CHINESE_CUE if has_chinese(question) and not turns[-1].sql else ""
        prompt = CONDENSE.format(chat_history=history, question=question, language=cue)
        text = self.llm.complete(prompt, stop=STOP).text
        rewrite = " ".join(text.split()).strip().strip('"“”')
        refused = self._refusal(rewrite, question, turns)
        if refused:
            return Condensed(question, mark, False, dropped, f"The condensed question was not used: {refused}.")
        if rewrite == question:
            note = "The condense step left the follow-up as it was: the model wrote it back unchanged."
            return Condensed(question, mark, False, dropped, note)
        return Condensed(rewrite, mark, True, dropped)

    @staticmethod
    def _refusal(rewrite: str, question: str, turns: list[Trace]) -> str | None:
        if not rewrite:
            return "the model wrote nothing"
        if has_chinese(rewrite) != has_chinese(question) and not turns[-1].sql:
            return "it was written in another language than the question"
        if QUESTION.search(question) and not QUESTION.search(rewrite):
            return "it states an answer instead of asking"
        earlier = {t.standalone_question or t.question for t in turns}
        if rewrite in earlier and rewrite != question:
            return "it repeated an earlier question"
        last = turns[-1].standalone_question or turns[-1].question
        if _words(rewrite) > _words(question) + _words(last) + MAX_GROWTH_WORDS:
            return "it was far longer than the question and the last turn together"
        return None
