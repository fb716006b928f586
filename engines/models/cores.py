"""Torch on every core for one step.

The process keeps torch on one thread (OMP_NUM_THREADS=1, engines/__init__.py): right for embedding one short
question, where a second thread costs more than it saves. A step that scores or embeds many texts at once
(a rerank of 20 passages, an ingest batch) shares them out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def all_cores() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
