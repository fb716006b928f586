"""Small results read out exactly, without the model: no rows, one value, a short list, a label with a number per
row, or one row of a few columns.

The model writing a sentence from rows misreads small tables: asked "按城市统计呢？", rows of Berlin 2 and five cities
with 1 became "There are 6 customers in each city who are older than 30", and "北京有哪些客户？" with two rows became
"北京有100个客户" (it read the query's LIMIT 100). A template cannot misread and costs no model call; the model
still writes about what a template cannot say (wide or long results).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_LISTED = 10  # rows a list reads out; more, and the model summarises
MAX_FIELDS = 4  # columns of a single row read out as "column: value"
WORDS = {
    "en": {"none": "The query returned no rows.", "one": "The answer is {value}.", "list": "The answer: {items}.", "sep": ", ", "pair": "; "},
    "zh": {"none": "查询没有返回任何结果。", "one": "答案是{value}。", "list": "答案：{items}。", "sep": "、", "pair": "；"},
}


def value_text(value: Any) -> str:
    if isinstance(value, float):  # an average's 10.428571428571429 reads as 10.4286, a REAL column's 42.0 as 42
        return str(int(value)) if value.is_integer() else str(round(value, 4))
    return "NULL" if value is None else str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_out(rows: Sequence[Sequence[Any]], columns: Sequence[str], language: str) -> str | None:
    """The result said in words by a template, or None when it is too big or wide for one."""
    words = WORDS[language]
    if not rows:
        return words["none"]
    width = len(rows[0])
    if len(rows) == 1 and width == 1:
        return words["one"].format(value=value_text(rows[0][0]))
    if width == 1 and len(rows) <= MAX_LISTED:
        return words["list"].format(items=words["sep"].join(value_text(r[0]) for r in rows))
    if width == 2 and len(rows) <= MAX_LISTED and all(_is_number(r[1]) for r in rows):
        return words["list"].format(items=words["pair"].join(f"{value_text(label)}: {value_text(n)}" for label, n in rows))
    if len(rows) == 1 and width <= MAX_FIELDS and len(columns) == width:
        return words["list"].format(items=words["pair"].join(f"{c}: {value_text(v)}" for c, v in zip(columns, rows[0])))
    return None
