"""The model's translations of a schema's names: parsed by number, whatever small models add around them."""

from __future__ import annotations

from tools.aliases import other_language, parse_lines


def test_lines_are_read_by_their_number() -> None:
    items = ["Pets", "PetType", "pet_age"]
    answer = "Table: Pets\n1. Pets = 宠物\n2) `PetType` = 宠物类型。\n3. 宠物年龄\n4. extra = 多余\nno number = 无"
    assert parse_lines(answer, items) == {"Pets": "宠物", "PetType": "宠物类型", "pet_age": "宠物年龄"}


def test_aliases_are_written_in_the_language_the_names_are_not() -> None:
    assert other_language(["singer", "Country", "Song_Name"]) == "zh"
    assert other_language(["客户", "姓名", "城市", "id"]) == "en"
