"""The answering model: the local Qwen GGUF through llama.cpp by default, or an OpenAI(-compatible) endpoint."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, CompletionResponse, CompletionResponseGen, LogProb
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.span import active_span_id
from llama_index.core.llms import LLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from pydantic import BaseModel, ValidationError

from engines.models.endpoint import ModelEndpointError, endpoint_errors, guarded_stream
from engines.models.files import require_model
from engines.models.prompt_states import PromptStates
from engines.settings import Settings
from engines.trace import ModelCall
from engines.tracing.recorder import model_call

JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
Reply = TypeVar("Reply", bound=BaseModel)

DEFAULT_SYSTEM = "You are a helpful assistant. Answer briefly and only from the information given."
# "SQLResult:" keeps NL-to-SQL generation from inventing results (measured 9.3 s -> 1.9 s per query).
STOP = ["SQLResult:", "<|im_end|>", "<|endoftext|>"]
dispatcher = get_dispatcher(__name__)


ASSISTANT_START = "<|im_start|>assistant\n"
# Marks where a prompt's variable part begins, in the prompts given to `pin_fixed_prefixes` (a private-use character:
# no prompt holds it).
VARIABLE = "\ue000"


def _turn(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


def chatml_messages(messages: Sequence[ChatMessage]) -> str:
    """Qwen's ChatML format; the llama.cpp wrapper's default (Llama-2 [INST]) format is wrong for Qwen."""
    turns = [_turn(m.role.value, m.content) for m in messages]
    if not messages or messages[0].role.value != "system":
        turns.insert(0, _turn("system", DEFAULT_SYSTEM))
    return "".join(turns) + ASSISTANT_START


def chatml_completion(completion: str) -> str:
    return chatml_messages([ChatMessage(role="user", content=completion)])


def chatml_continued(content: str) -> str:
    """The user's turn left open after `content`, so the model goes on writing it (as a code model continues the
    file it is shown) instead of answering it. Up to the end of `content` it is the text `chatml_completion`
    gives, so llama.cpp reuses the evaluation of one for the other."""
    return _turn("system", DEFAULT_SYSTEM) + f"<|im_start|>user\n{content}"


def _recorder(model: Any, steps: list[list[LogProb]], top: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A llama.cpp logits processor that records each generated token's `top` alternatives, leaving the logits as
    they are. llama.cpp's own `logprobs` needs `logits_all=True`, which keeps logits for every prompt token
    (8,192 x 151,936 floats: 5 GB)."""

    def record(input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        shifted = scores - scores.max()
        logprobs = shifted - np.log(np.exp(shifted).sum())
        best = np.argpartition(-logprobs, top)[:top]
        tokens = [model.detokenize([int(t)]).decode("utf-8", errors="ignore") for t in best]
        steps.append([LogProb(token=t, logprob=float(logprobs[i])) for t, i in zip(tokens, best)])
        return scores

    return record


class _Meter:
    """One call's prompt reuse and llama.cpp's own timings. The reused prefix is worked out as llama.cpp does
    before it evaluates (the longest common prefix with the tokens it holds, one token short of the whole prompt,
    whose logits it needs); prompt and generation times come from its performance counters, reset per call."""

    def __init__(self, model: Any, tokens: list[int]) -> None:
        from llama_cpp import Llama, llama_perf_context_reset

        self.model = model
        self.span_id = active_span_id.get()  # the LLM call's span: a stream's counters are read after it closed
        held = model._input_ids[: model.n_tokens].tolist()
        self.prompt_tokens = len(tokens)
        self.reused = min(Llama.longest_token_prefix(held, tokens), max(len(tokens) - 1, 0))
        llama_perf_context_reset(model._ctx.ctx)

    def record(self) -> None:
        from llama_cpp import llama_perf_context

        perf = llama_perf_context(self.model._ctx.ctx)
        call = ModelCall(
            prompt_tokens=self.prompt_tokens,
            prompt_tokens_evaluated=self.prompt_tokens - self.reused,
            prompt_tokens_reused=self.reused,
            generated_tokens=perf.n_eval,
            prompt_ms=round(perf.t_p_eval_ms, 1),
            generate_ms=round(perf.t_eval_ms, 1),
        )
        model_call(call, self.span_id)


def prompt_states_folder(settings: Settings) -> Path:
    """Where the evaluated prompts of this model file (by name, size and time) at this context size are kept between
    processes: another file under the same name does not read this one's states."""
    stat = settings.model_path.stat()
    return settings.state_dir / "prompt-states" / f"{settings.model_path.stem}-{stat.st_size}-{int(stat.st_mtime)}-{settings.context_window}"


def _local_llm(settings: Settings) -> LLM:
    from llama_cpp import LlamaGrammar, LogitsProcessorList
    from llama_index.llms.llama_cpp import LlamaCPP

    class LlamaCPPWithStops(LlamaCPP):
        """LlamaCPP whose complete() and chat() honour a per-call `stop`, `max_tokens`, `logprobs` with
        `top_logprobs` (as the OpenAI API takes them), `json_schema` (the reply kept to that JSON shape) and
        `temperature` with `seed` (a sample instead of the greedy answer); the stock ones
        drop their keyword arguments, and chat() drops the log-probabilities."""

        _states: PromptStates | None = PrivateAttr(default=None)
        _pins: list[list[int]] = PrivateAttr(default_factory=list)

        def keep_prompt_states(self, capacity_bytes: int, folder: Path | None = None) -> None:
            self._states = PromptStates(self._model, capacity_bytes, folder) if capacity_bytes > 0 else None
            for tokens in self._pins if self._states is not None else []:
                self._states.pin(tokens)

        def pin_prefix(self, prefix: str) -> None:
            """Keep the evaluation of `prefix` (formatted as the model reads it) once a prompt has begun with it."""
            tokens = self._model.tokenize(prefix.encode("utf-8"), special=True)  # as a prompt is
            if tokens in self._pins:
                return
            self._pins.append(tokens)
            if self._states is not None:
                self._states.pin(tokens)

        @contextmanager
        def prompt_states_set_aside(self) -> Iterator[None]:
            """Nothing kept is restored or added meanwhile (a benchmark's stock engine runs without them)."""
            kept, self._states = self._states, None
            try:
                yield
            finally:
                self._states = kept

        def _meter(self, prompt: str) -> _Meter:
            """Bring back a kept evaluation of the prompt's prefix, then meter the call."""
            tokens = self._model.tokenize(prompt.encode("utf-8"), special=True)
            if self._states is not None:
                self._states.prepare(tokens)
            meter = _Meter(self._model, tokens)
            if self._states is not None:  # a pinned prefix read now is read in this call: metered as its prompt
                self._states.pin_prefix_of(tokens)
            return meter

        @dispatcher.span  # the stock methods open no span: without one, no span is the model call's (recorder, OpenInference)
        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            if not formatted:
                prompt = self.completion_to_prompt(prompt)
            stop = [*self.generate_kwargs.get("stop", []), *kwargs.get("stop", [])]
            steps: list[list[LogProb]] = []
            extra = {"max_tokens": kwargs["max_tokens"]} if kwargs.get("max_tokens") else {}
            if kwargs.get("logprobs"):
                top = kwargs.get("top_logprobs") or 1
                extra["logits_processor"] = LogitsProcessorList([_recorder(self._model, steps, top)])
            if kwargs.get("json_schema"):  # llama.cpp's grammar: the reply can only be JSON of this shape
                extra["grammar"] = LlamaGrammar.from_json_schema(json.dumps(kwargs["json_schema"]), verbose=False)
            if kwargs.get("temperature"):  # the default top_k=1 would make every sample the greedy answer
                extra.update(temperature=kwargs["temperature"], top_k=40, top_p=0.95, seed=kwargs.get("seed"))
            meter = self._meter(prompt)
            response = self._model(prompt=prompt, **{**self.generate_kwargs, "stream": False, "stop": stop, **extra})
            meter.record()
            return CompletionResponse(text=response["choices"][0]["text"], raw=response, logprobs=steps or None)

        def complete_prefixed(self, prompt: str, prefix: str, stop: list[str], **sampling: Any) -> str:
            """The answer to `prompt` begun with `prefix` inside the chat template (prefix included)."""
            return prefix + self.complete(self.completion_to_prompt(prompt) + prefix, formatted=True, stop=stop, **sampling).text

        def continue_prefixed(self, prompt: str, prefix: str, stop: list[str], **sampling: Any) -> str:
            """`prompt` continued inside the user's own turn from `prefix` (prefix included)."""
            return prefix + self.complete(chatml_continued(prompt) + prefix, formatted=True, stop=stop, **sampling).text

        @dispatcher.span
        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
            """The stock stream, metered (the stock one also leaves `stream` set in the shared generate_kwargs)."""
            prompt = prompt if formatted else self.completion_to_prompt(prompt)
            meter = self._meter(prompt)
            chunks = self._model(prompt=prompt, **{**self.generate_kwargs, "stream": True})

            def gen() -> Iterator[CompletionResponse]:
                text = ""
                for chunk in chunks:
                    delta = chunk["choices"][0]["text"]
                    text += delta
                    yield CompletionResponse(delta=delta, text=text, raw=chunk)
                meter.record()

            return gen()

        @dispatcher.span
        @llm_chat_callback()
        def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
            completion = self.complete(self.messages_to_prompt(messages), formatted=True, **kwargs)
            return ChatResponse(message=ChatMessage(role="assistant", content=completion.text), raw=completion.raw, logprobs=completion.logprobs)

    llm = LlamaCPPWithStops(
        model_path=str(require_model(settings.model_path)),
        temperature=0.0,
        max_new_tokens=settings.max_new_tokens,
        context_window=settings.context_window,
        generate_kwargs={"stop": STOP, "top_k": 1},
        model_kwargs={"n_threads": settings.llm_threads, "n_gpu_layers": 0},
        messages_to_prompt=chatml_messages,
        completion_to_prompt=chatml_completion,
        verbose=False,
    )
    llm.keep_prompt_states(settings.prompt_states_mb << 20, prompt_states_folder(settings))
    return llm


def pin_fixed_prefixes(llm: LLM, prompts: Iterable[str | Sequence[ChatMessage]]) -> None:
    """Pin each prompt's text before `VARIABLE`, formatted as the model reads it (a completion prompt, or chat
    messages), so the local model evaluates it once however many prompts come between; an endpoint's server keeps
    shared prefixes itself (vLLM's prefix caching, llama.cpp's slots), so there it does nothing."""
    pin = getattr(llm, "pin_prefix", None)
    if pin is None:
        return
    for prompt in prompts:
        text = llm.completion_to_prompt(prompt) if isinstance(prompt, str) else llm.messages_to_prompt(prompt)
        pin(text[: text.index(VARIABLE)])


def complete_with_prefix(llm: LLM, prompt: str, prefix: str, stop: list[str], temperature: float = 0.0, seed: int = 0) -> str:
    """The model's answer, begun with `prefix` where the model allows it (the local one: then it cannot open with
    prose or a code fence); an endpoint's chat API cannot be begun for it, so its whole answer is returned.
    A `temperature` above 0 samples an answer (the same `seed` gives the same sample on the local model)."""
    sampling = {"temperature": temperature, "seed": seed} if temperature > 0 else {}
    if hasattr(llm, "complete_prefixed"):
        return llm.complete_prefixed(prompt, prefix, stop, **sampling)
    return llm.complete(prompt, stop=stop, **sampling).text


def complete_json(llm: LLM, prompt: str, schema: dict[str, Any]) -> str:
    """The model's reply to `prompt`, meant to be a JSON object of `schema`: the local model can write nothing
    else (a grammar); an endpoint is only asked to, and its reply must still be validated."""
    if hasattr(llm, "complete_prefixed"):
        return llm.complete(prompt, json_schema=schema).text
    return llm.complete(prompt).text


def json_reply(reply: str, model: type[Reply]) -> Reply:
    """The first JSON object in a model's reply, validated as `model`; ValueError saying what was wrong (the
    instruction writers' replies may come with prose around them, from an endpoint that no grammar holds)."""
    found = JSON_OBJECT.search(reply)
    if not found:
        raise ValueError(f"no JSON in the reply: {reply.strip()[:120]!r}")
    try:
        return model.model_validate(json.loads(found.group(0)))
    except (json.JSONDecodeError, ValidationError) as err:
        raise ValueError(f"malformed JSON ({str(err).splitlines()[0]}): {found.group(0)[:160]!r}") from err


def can_continue(llm: LLM) -> bool:
    """Whether the model can go on writing a prompt (`continue_prefixed`): the local one; an endpoint's chat API
    only answers."""
    return hasattr(llm, "continue_prefixed")


def build_llm(settings: Settings) -> LLM:
    if settings.llm_backend == "local":
        return _local_llm(settings)
    if settings.llm_backend == "openai":
        from llama_index.llms.openai import OpenAI

        return OpenAI(model=settings.llm_model, api_key=settings.api_key, api_base=settings.api_base, temperature=0.0)
    return _endpoint_llm(settings)


def _endpoint_llm(settings: Settings) -> LLM:
    from llama_index.llms.openai_like import OpenAILike

    if not settings.api_base:
        raise ModelEndpointError(
            "RAGROUTER_LLM_BACKEND=openai_like needs the endpoint's base URL in RAGROUTER_API_BASE (e.g. http://127.0.0.1:8088/v1)"
        )

    class OpenAILikeWithClearErrors(OpenAILike):
        """OpenAILike whose failures are ModelEndpointError naming the endpoint, after at most one retry: the stock
        client retries three times with back-off and raises the SDK's own errors, which the app and CLI cannot tell
        from a bug."""

        @dispatcher.span
        def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
            with endpoint_errors(self.api_base):
                return super().chat(messages, **kwargs)

        @dispatcher.span
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            with endpoint_errors(self.api_base):
                return super().complete(prompt, formatted, **kwargs)

        @dispatcher.span
        def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[ChatResponse]:
            with endpoint_errors(self.api_base):
                return guarded_stream(self.api_base, super().stream_chat(messages, **kwargs))

        @dispatcher.span
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
            with endpoint_errors(self.api_base):
                return guarded_stream(self.api_base, super().stream_complete(prompt, formatted, **kwargs))

    return OpenAILikeWithClearErrors(
        model=settings.llm_model,
        api_base=settings.api_base,
        api_key=settings.api_key or "none",
        temperature=0.0,
        is_chat_model=True,
        context_window=settings.context_window,
        max_tokens=settings.max_new_tokens,
        timeout=settings.endpoint_timeout_s,
        max_retries=1,
    )
