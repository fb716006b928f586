"""`ScriptedSQLWriter`, a scripted LLM double for the SQL engine's tests.

Where the point is what the engine does with a given piece of model output (a hostile statement, a wrong
column name), the "model" must write exactly that output: it returns its scripted SQL in order (the last one
again once they run out) and keeps the prompts it was given.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM


class ScriptedSQLWriter(CustomLLM):
    sqls: list[str]
    prompts: list[str] = []
    ways: list[str] = []  # how each query was asked for: "answer", "sample" or (ScriptedFileWriter) "file"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-sql-writer")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        self.ways.append("sample" if kwargs.get("temperature") else "answer")
        sql = self.sqls[min(len(self.prompts), len(self.sqls)) - 1]
        return CompletionResponse(text=f"```sql\n{sql}\n```")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        yield self.complete(prompt)


class ScriptedFileWriter(ScriptedSQLWriter):
    """A scripted double that, like the local model, can also continue a prompt as a file (`continue_prefixed`)."""

    def continue_prefixed(self, prompt: str, prefix: str, stop: list[str], **sampling: Any) -> str:
        text = self.complete(prompt).text
        self.ways[-1] = "file"
        return text


class ScriptedText(CustomLLM):
    """Scripted LLM double: every call returns `reply` as it is (a model's yes/no, its extract, a garbled line)."""

    reply: str

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-text")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.reply)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        yield self.complete(prompt)
