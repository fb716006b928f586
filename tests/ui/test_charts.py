"""The app's charts from hand-made traces (no model needed: the charts only read the trace)."""

from __future__ import annotations

from engines.trace import Candidate, CragRecord, RouteRecord, SqlAttempt, Trace
from ui.charts import result_chart, route_chart, stages

ROUTE = RouteRecord(
    chosen="shop", candidates=[Candidate(name="shop", score=0.85), Candidate(name="web", score=0.80)], reason="r", selector="embedding"
)


def test_a_label_and_a_number_make_a_bar_chart_and_other_shapes_none() -> None:
    per_city = Trace(question="q", route=ROUTE, rows=[["Beijing", 3], ["Berlin", 2]], columns=["city", "COUNT(*)"])
    spec = result_chart(per_city).to_dict()
    assert spec["mark"]["type"] == "bar" and spec["encoding"]["x"]["title"] == "COUNT(*)"
    count_first = Trace(question="q", route=ROUTE, rows=[[3, "Beijing"], [2, "Berlin"]], columns=["COUNT(*)", "city"])
    spec = result_chart(count_first).to_dict()
    assert spec["encoding"]["x"]["title"] == "COUNT(*)" and spec["encoding"]["y"]["title"] == "city"
    assert spec["datasets"][spec["data"]["name"]][0] == {"label": "Beijing", "value": 3}
    assert result_chart(Trace(question="q", rows=[[1, 3], [2, 2]], columns=["id", "n"])) is None
    assert result_chart(Trace(question="q", rows=[[7]], columns=["COUNT(*)"])) is None
    assert result_chart(Trace(question="q", rows=[["a", "b"], ["c", "d"]], columns=["x", "y"])) is None
    assert result_chart(Trace(question="q", rows=[["Beijing", 3]], columns=["city", "n"])) is None


def test_the_chosen_source_is_highlighted_and_stages_follow_the_path() -> None:
    spec = route_chart(Trace(question="q", route=ROUTE)).to_dict()
    assert spec["encoding"]["color"]["field"] == "chosen"
    sql = Trace(question="q", route=ROUTE, timings_ms={"route": 12.0}, sql_attempts=[SqlAttempt(sql="x", ms=900.0), SqlAttempt(sql="y", ms=800.0)])
    assert list(stages(sql)["stage"]) == ["route", "SQL attempt 1", "SQL attempt 2"]
    crag = CragRecord(
        confidence=8.0, band="high", actions=["retrieve", "grade"], steps=[{"action": "retrieve", "ms": 5.0}, {"action": "grade", "ms": 9.0}]
    )
    assert list(stages(Trace(question="q", route=ROUTE, crag=crag))["stage"]) == ["route", "retrieve", "grade"]
    timed = Trace(question="q", route=ROUTE, timings_ms={"route": 12.0, "answer": 900.0, "generate": 700.0, "retrieve": 90.0, "compress": 60.0})
    assert list(stages(timed)["stage"]) == ["route", "retrieve", "compress", "generate"]
    assert list(stages(Trace(question="q", route=ROUTE, timings_ms={"answer": 5.0}))["stage"]) == ["route", "answer"]
