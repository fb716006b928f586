"""Small results said by a template, exactly; the rest left to the model."""

import pytest

from engines.sql.readout import MAX_LISTED, read_out


@pytest.mark.parametrize(
    ("rows", "columns", "language", "said"),
    [
        ([], ["name"], "en", "The query returned no rows."),
        ([(7,)], ["COUNT(*)"], "en", "The answer is 7."),
        ([(10.428571428571429,)], ["AVG(age)"], "zh", "答案是10.4286。"),
        ([("Li Na",), ("Liu Yang",)], ["name"], "zh", "答案：Li Na、Liu Yang。"),
        (
            [("Berlin", 2), ("Beijing", 1), ("Shanghai", 1), ("Paris", 1), ("Tokyo", 1), ("London", 1)],
            ["city", "COUNT(*)"],
            "en",
            "The answer: Berlin: 2; Beijing: 1; Shanghai: 1; Paris: 1; Tokyo: 1; London: 1.",
        ),
        ([("Li Na", "Beijing", 35)], ["name", "city", "age"], "en", "The answer: name: Li Na; city: Beijing; age: 35."),
        ([(None,)], ["email"], "en", "The answer is NULL."),
        ([(596462.0,), (476090.5,)], ["earnings"], "en", "The answer: 596462, 476090.5."),
    ],
)
def test_a_small_result_is_read_out_exactly(rows, columns, language: str, said: str) -> None:
    assert read_out(rows, columns, language) == said


@pytest.mark.parametrize(
    ("rows", "columns"),
    [
        ([(f"name {n}",) for n in range(MAX_LISTED + 1)], ["name"]),  # a long list: the model summarises
        ([("a", "b"), ("c", "d")], ["x", "y"]),  # two text columns: no label and number
        ([("a", 1, 2), ("b", 3, 4)], ["x", "y", "z"]),  # several wide rows
        ([(1, 2, 3, 4, 5)], ["a", "b", "c", "d", "e"]),  # one row too wide
    ],
)
def test_what_a_template_cannot_say_is_left_to_the_model(rows, columns) -> None:
    assert read_out(rows, columns, "en") is None
