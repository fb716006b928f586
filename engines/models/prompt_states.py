"""Evaluated prompts kept aside, so a prompt read once is not read again after other prompts took the context.

llama.cpp reuses the evaluation of the prompt it holds, up to the first token that differs. A SQL question reads
its database's schema (500 tokens or more: seconds on a laptop's CPU); the answer sentence or a documents question
asked next replaces it, and the next question on that database reads it all again. This store keeps the model's
state as the next prompt is about to replace it, and gives it back when a prompt shares a longer prefix with a kept
state than with the live one.

Written by hand because llama-cpp-python's own `LlamaRAMCache`/`LlamaDiskCache` keep a `LlamaState`, which copies
the logits buffer too: 512 x 151,936 floats (311 MB) per entry for Qwen's vocabulary, a second per save, while
the cache counts only the KV's few MB against its capacity. This keeps sequence 0's KV cells only
(`llama_state_seq_get_data`: about 28 KB per token for the 1.5B default) and replays the last prompt token, as
llama.cpp does after any prefix hit, for its logits.

Fixed prefixes (the answer templates' instructions, the grader's, the rewrites') are pinned: the first prompt that
begins with one evaluates it on its own, and that state of the prefix alone is kept apart from the rest, never
superseded or evicted, so a question whose prompt starts with it reads none of it again, whatever came between.

Given a folder, kept and pinned states are also written there (and the live one at exit), so the next process, a
fresh `ragrouter ask` or a restarted app, starts with the schemas and fixed prefixes already read. The folder is
named by the model file and its context size, whose states these are; one that llama.cpp will not take back is
read as if absent.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

# A kept state sharing this share of its tokens with a newer one is replaced by it: questions on one database
# share the schema and differ in the last lines, so the newest state serves the next question as well.
SUPERSEDED_SHARE = 0.8
# A pinned prefix's text tokenized alone may end in tokens that merge with the variable text after it in a whole
# prompt (Qwen's tokenizer joins "：" to the Chinese word that follows): a prompt matching all but this many of its
# tokens begins with it.
PIN_BOUNDARY_TOKENS = 2
PINNED_FILE = "pinned-"


def common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class PromptStates:
    """Kept states of one llama.cpp model (a `llama_cpp.Llama`), newest last, within `capacity_bytes`."""

    def __init__(self, model: Any, capacity_bytes: int, folder: Path | None = None) -> None:
        self.model, self.capacity, self.folder = model, capacity_bytes, folder
        self.kept: OrderedDict[tuple[int, ...], bytes] = OrderedDict()
        self.pins: list[tuple[int, ...]] = []  # fixed prefixes, as their text tokenizes alone
        self.pinned: dict[tuple[int, ...], bytes] = {}  # their evaluations, keyed by the tokens of a prompt that began with one
        if folder is not None:
            self._read(folder)
            atexit.register(self.keep_live)

    def keep_live(self) -> None:
        """Keep the state the model holds now (at exit: for the next process)."""
        if self.model.n_tokens:
            self._keep(tuple(self.model._input_ids[: self.model.n_tokens].tolist()))

    def pin(self, tokens: list[int]) -> None:
        """Pin a fixed prefix: evaluated once, with the first prompt that begins with it, and kept."""
        if tokens and tuple(tokens) not in self.pins:
            self.pins.append(tuple(tokens))

    def prepare(self, tokens: list[int]) -> None:
        """Before `tokens` are evaluated: keep the live state if they would replace most of it, and restore a kept
        or pinned state that shares more of their prefix than the live one does."""
        live = tuple(self.model._input_ids[: self.model.n_tokens].tolist())
        prompt = tuple(tokens)
        shared = common_prefix(live, prompt)
        if live and shared < SUPERSEDED_SHARE * len(live):
            self._keep(live)
        best = max([*self.kept, *self.pinned], key=lambda k: common_prefix(k, prompt), default=None)
        if best is not None and common_prefix(best, prompt) > shared:
            self._restore(best)

    def pin_prefix_of(self, tokens: list[int]) -> None:
        """After `prepare`, inside the metered call: when `tokens` begin with a pinned prefix not yet evaluated and
        the model holds no more than that prefix of them, evaluate the rest of the prefix and keep its state."""
        prompt = tuple(tokens)
        key = self._unevaluated_pin(prompt)
        if key is None:
            return
        held = common_prefix(tuple(self.model._input_ids[: self.model.n_tokens].tolist()), prompt)
        if held > len(key):
            return  # evaluated with more of this prompt: pinned by a later prompt rather than read again now
        self.model.n_tokens = held
        self.model.eval(list(key[held:]))
        self.pinned[key] = self._state()
        self._write(key, self.pinned[key], PINNED_FILE)

    def _unevaluated_pin(self, prompt: tuple[int, ...]) -> tuple[int, ...] | None:
        """The prompt's first tokens that a pinned prefix covers, when no pinned state holds them yet."""
        for pin in self.pins:
            shared = common_prefix(pin, prompt)
            if shared < len(pin) - PIN_BOUNDARY_TOKENS or shared == len(prompt):
                continue
            if not any(common_prefix(k, prompt) >= len(pin) - PIN_BOUNDARY_TOKENS for k in self.pinned):
                return prompt[:shared]
        return None

    def _state(self) -> bytes:
        from llama_cpp import llama_state_seq_get_data, llama_state_seq_get_size

        ctx = self.model._ctx.ctx
        size = llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_state_seq_get_data(ctx, buffer, size, 0)
        return bytes(buffer[:written])

    def _keep(self, key: tuple[int, ...]) -> None:
        from llama_cpp import llama_state_seq_get_size

        if llama_state_seq_get_size(self.model._ctx.ctx, 0) > self.capacity:
            return
        state = self._state()
        for old in [k for k in self.kept if common_prefix(k, key) >= SUPERSEDED_SHARE * len(k)]:
            self._forget(old)
        self.kept[key] = state
        self._write(key, state)
        while sum(map(len, self.kept.values())) > self.capacity:
            self._forget(next(iter(self.kept)))

    def _forget(self, key: tuple[int, ...]) -> None:
        del self.kept[key]
        if self.folder is not None:
            self._file(key).unlink(missing_ok=True)

    def _file(self, key: tuple[int, ...], prefix: str = "") -> Path:
        return self.folder / f"{prefix}{hashlib.sha1(np.asarray(key, dtype=np.int32).tobytes()).hexdigest()}.npz"

    def _write(self, key: tuple[int, ...], state: bytes, prefix: str = "") -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._file(key, prefix)
        with path.with_suffix(".tmp").open("wb") as f:  # whole or not at all: a killed process leaves no half file
            np.savez(f, tokens=np.asarray(key, dtype=np.int32), state=np.frombuffer(state, dtype=np.uint8))
        path.with_suffix(".tmp").replace(path)

    def _read(self, folder: Path) -> None:
        """The states an earlier process kept and pinned, oldest first; a file that cannot be read is dropped."""
        for path in sorted(folder.glob("*.npz"), key=lambda p: p.stat().st_mtime):
            states = self.pinned if path.name.startswith(PINNED_FILE) else self.kept
            try:
                with np.load(path) as saved:
                    states[tuple(saved["tokens"].tolist())] = saved["state"].tobytes()
            except (OSError, ValueError, KeyError):
                path.unlink(missing_ok=True)

    def _restore(self, key: tuple[int, ...]) -> None:
        from llama_cpp import llama_state_seq_set_data

        pinned = key in self.pinned
        data = self.pinned.pop(key) if pinned else self.kept.pop(key)
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_state_seq_set_data(self.model._ctx.ctx, buffer, len(data), 0) == 0:
            if self.folder is not None:
                self._file(key, PINNED_FILE if pinned else "").unlink(missing_ok=True)
            return  # llama.cpp could not take it back: the prompt is read as if nothing were kept
        self.model.input_ids[: len(key)] = key
        self.model.n_tokens = len(key)
        self.model._requires_eval = True  # the restored cells have no logits: replay the last prompt token
        (self.pinned if pinned else self.kept)[key] = data  # a kept one: newest again
