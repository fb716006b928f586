"""Answer prompts shared by the documents and web paths."""

from llama_index.core import PromptTemplate

# Shorter than the stock citation prompt (the 1.5B model reads ~150 tokens/s), bilingual, and told to prefer
# current documents over superseded ones and to say when the sources lack the answer.
CITATION_QA = PromptTemplate(
    "Answer the question using only the numbered sources below. Cite the sources you use like [1] or [2]. "
    "If sources disagree, prefer the newer or current one and ignore documents marked outdated or superseded. "
    "If the sources do not contain the answer, say that the sources do not contain it. "
    "Answer in the same language as the question, in at most three sentences.\n\n"
    "{context_str}\n\nQuestion: {query_str}\nAnswer: "
)
CITATION_REFINE = PromptTemplate(
    "Existing answer: {existing_answer}\n\nMore sources:\n{context_msg}\n\n"
    "Improve the existing answer to the question using these sources, citing them like [3]. "
    "If they do not help, repeat the existing answer.\nQuestion: {query_str}\nAnswer: "
)
