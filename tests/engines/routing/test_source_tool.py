from engines.routing.source_tool import clauses


def test_bilingual_description_is_split_into_clauses_for_the_router() -> None:
    parts = clauses("Online shop sales database / 网店销售数据库：客户、订单。Counts and totals. 统计销售额")
    assert parts == ["Online shop sales database", "网店销售数据库：客户、订单", "Counts and totals.", "统计销售额"]
    assert clauses(None) == []
    assert clauses("Orders (quantity / 数量). 统计销售额") == ["Orders (quantity / 数量).", "统计销售额"]
