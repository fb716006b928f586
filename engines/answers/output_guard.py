"""The output guard: the final answer is checked against YAML rules (leaked stack traces, exception text, API
errors, keys, internal paths); a match replaces the answer with the rule's message. Rules live in a file so that
changing them needs no code change (`RAGROUTER_OUTPUT_GUARD_FILE`)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class GuardFileError(ValueError):
    """The output guard's rules file is missing, not YAML, or not in the expected shape."""


class GuardRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    message: str
    regexes: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)

    def matches(self, text: str) -> bool:
        lowered = text.lower()
        return any(re.search(r, text, re.IGNORECASE) for r in self.regexes) or any(k.lower() in lowered for k in self.keywords)


class OutputGuard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: list[GuardRule]

    def check(self, answer: str) -> GuardRule | None:
        """The first rule the answer breaks, if any."""
        return next((rule for rule in self.rules if rule.matches(answer)), None)


def load_output_guard(path: Path) -> OutputGuard:
    try:
        guard = OutputGuard.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        for rule in guard.rules:
            for pattern in rule.regexes:
                re.compile(pattern)
    except FileNotFoundError as err:
        raise GuardFileError(f"output guard file {path} does not exist") from err
    except (yaml.YAMLError, ValidationError, re.error, TypeError) as err:
        raise GuardFileError(f"output guard file {path} is not valid: {str(err).splitlines()[0]}") from err
    return guard
