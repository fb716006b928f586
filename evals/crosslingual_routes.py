"""Routing across languages, ours only (the stock LLMSingleSelector reads every description per question: the
router suite runs it beside ours): each router question file routed as the product does now (`after`) and as
main did before issue 64 (`before`: no aliases read, no second look).

`python -m evals.crosslingual_routes after evals/questions/router-cspider.test.jsonl …` prints, per file and
group, how many questions went to their expected source (docs/experiments/crosslingual.md).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import tools.build
from engines.aliases import Aliases
from engines.settings import DATA_DIR, Settings
from evals.datasets import read_jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("before", "after"))
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    if args.mode == "before":  # main before issue 64 read no aliases
        tools.build.source_aliases = lambda *_, **__: Aliases()
    router = tools.build.build_router(Settings(second_look=args.mode == "after"), DATA_DIR / "eval-sources.yaml")
    for path in args.files:
        hits: dict[str, list[bool]] = defaultdict(list)
        for item in read_jsonl(path):
            hits[item.get("group", "all")].append(router.route(item["question"]).chosen == item["expected_source"])
        groups = ", ".join(f"{g} {sum(v)}/{len(v)}" for g, v in hits.items())
        print(f"{args.mode} {path.name}: {groups}; all {sum(map(sum, hits.values()))}/{sum(map(len, hits.values()))}")


if __name__ == "__main__":
    main()
