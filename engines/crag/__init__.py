"""Corrective RAG, a layer above the documents engine: grade the passages, rewrite or search the web, check the answer."""
