"""The evaluated-prompt store (engines/models/prompt_states.py) on the real local model."""

from __future__ import annotations

from engines.answers.prompts import CITATION_QA, fixed_parts
from engines.models.llm import VARIABLE, pin_fixed_prefixes
from engines.models.prompt_states import PIN_BOUNDARY_TOKENS
from engines.tracing.recorder import recording

SCHEMA = "\n\n".join(
    f"CREATE TABLE t{n} (\n\tid INTEGER,\n\tname TEXT NOT NULL,\n\tcity TEXT NOT NULL,\n\tage INTEGER NOT NULL,\n\tPRIMARY KEY (id)\n)"
    for n in range(8)
)


def _ask(question: str) -> str:
    return f"{SCHEMA}\n-- Using valid SQLite, answer the following question for the tables provided above.\n-- {question}\n"


def test_a_schema_read_once_is_not_read_again_after_another_prompt_took_the_context(llm) -> None:
    with recording() as clock:
        llm.complete(_ask("How many rows does t1 have?"), max_tokens=12)
        llm.complete("Say hello in French.", max_tokens=4)
        kept = llm.complete(_ask("What is the average age in t3?"), max_tokens=12).text
    first, other, again = clock.model_calls
    assert other.prompt_tokens_reused < 40  # only the system text is shared with the schema prompt
    assert again.prompt_tokens_reused > 0.8 * first.prompt_tokens and again.prompt_tokens_evaluated < 40
    llm.keep_prompt_states(0)
    try:
        llm.complete("Say hello in French.", max_tokens=4)
        with recording() as clock:
            read_again = llm.complete(_ask("What is the average age in t3?"), max_tokens=12).text
        assert clock.model_calls[0].prompt_tokens_reused < 40
    finally:
        llm.keep_prompt_states(128 << 20)
    assert kept == read_again  # the kept evaluation gives the model's own answer


def test_kept_states_outlive_the_process_in_their_folder(llm, tmp_path) -> None:
    llm.keep_prompt_states(128 << 20, tmp_path)
    try:
        llm.complete(_ask("How many rows does t2 have?"), max_tokens=12)
        llm._states.keep_live()  # what the process does at exit
        assert list(tmp_path.glob("*.npz"))
        llm._model.reset()
        llm.keep_prompt_states(128 << 20, tmp_path)  # a new process: nothing evaluated, the folder read
        with recording() as clock:
            llm.complete(_ask("Which names appear in t5?"), max_tokens=12)
        (call,) = clock.model_calls
        assert call.prompt_tokens_reused > 0.8 * call.prompt_tokens
    finally:
        llm.keep_prompt_states(128 << 20)


def _answer(question: str, source: str) -> str:
    return CITATION_QA.format(context_str=f"Source 1:\n{source}", query_str=question)


def test_a_pinned_prefix_is_read_once_whatever_came_between_and_in_the_next_process(llm, tmp_path) -> None:
    # Room for no whole prompt: only the pinned prefixes are kept, so nothing else can bring the instructions back.
    llm.keep_prompt_states(1, tmp_path)
    pin_fixed_prefixes(llm, fixed_parts(VARIABLE))
    fixed = min(len(pin) for pin in llm._states.pins) - PIN_BOUNDARY_TOKENS
    try:
        with recording() as clock:
            llm.complete(_answer("When did the Eiffel Tower open?", "The Eiffel Tower opened on 31 March 1889."), max_tokens=8)
            llm.complete(_ask("How many rows does t1 have?"), max_tokens=12)  # takes the context
            llm.complete(_answer("埃菲尔铁塔什么时候开放？", "埃菲尔铁塔于1889年3月31日开放。"), max_tokens=8)
            llm.complete(_answer("What is the capital of Germany?", "Berlin is the capital of Germany."), max_tokens=8)
            llm.complete(_answer("德国的首都是哪里？", "柏林是德国的首都。"), max_tokens=8)
        first, _, first_zh, second, second_zh = clock.model_calls
        assert first.prompt_tokens_reused < 40 and first_zh.prompt_tokens_reused < 40  # read in full, once
        assert second.prompt_tokens_reused >= fixed and second_zh.prompt_tokens_reused >= fixed
        assert len(list(tmp_path.glob("pinned-*.npz"))) == 2
        llm._model.reset()
        llm.keep_prompt_states(1, tmp_path)  # a new process: nothing evaluated, the folder read
        with recording() as clock:
            llm.complete(_answer("Who wrote Hamlet?", "Hamlet was written by William Shakespeare."), max_tokens=8)
        assert clock.model_calls[0].prompt_tokens_reused >= fixed
    finally:
        llm.keep_prompt_states(128 << 20)
