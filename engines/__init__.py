"""How a question gets answered: a package per path (routing, documents, crag, sql; web.py), what the paths share
(answers, models, matching), and the modules beneath them all (settings, sources, trace, tracing, language, milvus)."""

import contextlib
import logging
import os

# One embedding thread is ~70x faster for short texts on 2 cores (measured: 478 ms -> 7 ms), and nothing may wait on a model hub.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Milvus Lite's in-process server logs every unimplemented ping (AllocTimestamp) as an ERROR with a traceback;
# the call is optional and the noise buries the messages users need.
logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
# Libraries' DEBUG chatter is not for a user's terminal or page. jieba (Milvus Lite's Chinese BM25 analyzer) sets
# its own logger to DEBUG when imported, so it is imported here and told otherwise.
for _noisy in ("httpx", "urllib3", "pymilvus"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)
with contextlib.suppress(ImportError):
    import jieba

    jieba.setLogLevel(logging.WARNING)
