"""An answer that cites a passage names it: "The most recent one is [3]." tells a reader nothing until [3] says
which document it is."""

from __future__ import annotations

import re

CITATION_MARK = re.compile(r"\[(\d+)\]")


def name_citations(answer: str, names: list[str]) -> str:
    """After the first mark of each cited passage that the answer does not already name, its name in brackets:
    "[3]" -> "[3] (leave-policy.md)". `names[n - 1]` is passage n's title or file."""
    named: set[int] = set()

    def with_name(mark: re.Match[str]) -> str:
        n = int(mark.group(1))
        if not 1 <= n <= len(names) or n in named or names[n - 1] in answer:
            return mark.group(0)
        named.add(n)
        return f"{mark.group(0)} ({names[n - 1]})"

    return CITATION_MARK.sub(with_name, answer)
