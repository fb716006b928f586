"""The documents path: the Milvus store and ingest, hybrid retrieval, scope rules, rerank, compression, cited answers."""
