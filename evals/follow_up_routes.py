"""Where follow-ups are routed over all the reference sources, with no answers written: each SParC/CoSQL turn
condensed over the turns before it as if each had been answered right (its gold SQL in the history), then routed
as the product routes it, by the router's keep rule and by round one's margin-only rule.

Cheaper than the chat suite (no SQL written, no stock engine), so it covers many more English dialogues; the
chat suite's own routes (over the answers its runs wrote) are in its report. Run from the repository root:
`python -m evals.follow_up_routes --split test --limit 30`.
"""

from __future__ import annotations

import argparse
import json

from engines.conversation.condense import Condenser
from engines.routing.router import RagRouter
from engines.settings import DATA_DIR, Settings
from engines.trace import RouteRecord, Trace
from evals.chat_suite import condense_turn, routes_of, stay_rates
from evals.datasets import EVAL_DIR, _dialogues, stratified
from tools.build import build_router
from tools.chat import condense_llm


def routed_turns(router: RagRouter, condenser: Condenser, item: dict) -> dict:
    """Each turn's mark, standalone question and routes, over a history of right answers."""
    history: list[Trace] = []
    turns, routed = [], None
    for turn in item["turns"]:
        condensed, record = condense_turn(condenser, turn["utterance"], history)
        routes = routes_of(router, condensed, routed)
        routed = routes["routed"]
        route = RouteRecord(chosen=routed, candidates=[], reason="", selector="eval")
        history.append(Trace(question=turn["utterance"], standalone_question=condensed.question, route=route, sql=turn["query"]))
        turns.append({**record, **routes})
    return {"turns": turns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--limit", type=int, default=30, help="dialogues, half SParC and half CoSQL")
    args = parser.parse_args()
    items = [i for i in _dialogues(EVAL_DIR, "sparc", args.split) + _dialogues(EVAL_DIR, "cosql", args.split) if len(i["turns"]) > 1]
    items = stratified(items, args.limit, "set")
    router = build_router(Settings(), DATA_DIR / "eval-sources.yaml")
    condenser = Condenser(lambda: condense_llm(router.settings, router.llm), router.settings.history_tokens)
    records = [routed_turns(router, condenser, item) for item in items]
    for name in ("sparc", "cosql"):
        part = [(i, r) for i, r in zip(items, records) if i["set"] == name]
        rates = stay_rates([i for i, _ in part], [r for _, r in part], lambda i: i["db"])
        print(json.dumps({"set": name, "dialogues": len(part), **rates}))


if __name__ == "__main__":
    main()
