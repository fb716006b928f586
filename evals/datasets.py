"""Question lists for each suite, built from the public sets in ../shared/eval, split dev/test as the data is.

Each builder returns plain dicts in the suite's question-file format, so `--questions FILE` (JSON lines in the
same format) can replace any of them. Sampling is seeded, so every run and every developer gets the same list.
"""

from __future__ import annotations

import bz2
import json
import random
from collections import defaultdict
from pathlib import Path

from engines.documents.store import passage_id
from engines.settings import DATA_DIR

EVAL_DIR = DATA_DIR.parent.parent / "shared" / "eval"
QUESTIONS_DIR = Path(__file__).resolve().parent / "questions"
SPLITS = ("dev", "test")
PER_GROUP = 150


class EvalDataError(ValueError):
    """The evaluation data or question file is missing or malformed; the message says which."""


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise EvalDataError(f"question file {path} does not exist")
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except json.JSONDecodeError as err:
        raise EvalDataError(f"{path}: line {err.lineno} is not JSON ({err.msg})") from err


def require_fields(items: list[dict], fields: tuple[str, ...], origin: str) -> list[dict]:
    for number, item in enumerate(items, 1):
        missing = [f for f in fields if f not in item]
        if missing:
            raise EvalDataError(f"{origin}: question {number} lacks {', '.join(missing)} (needs {', '.join(fields)})")
    return items


def _eval_file(eval_dir: Path, *parts: str) -> Path:
    path = eval_dir.joinpath(*parts)
    if not path.exists():
        raise EvalDataError(f"{path} is missing: the public evaluation data is expected in {eval_dir} (see its README)")
    return path


def _load(eval_dir: Path, *parts: str):
    return json.loads(_eval_file(eval_dir, *parts).read_text(encoding="utf-8"))


def _jsonl(eval_dir: Path, *parts: str) -> list[dict]:
    return read_jsonl(_eval_file(eval_dir, *parts))


def _scifact_ids(eval_dir: Path, split: str) -> dict[str, dict[str, int]]:
    relevance: dict[str, dict[str, int]] = defaultdict(dict)
    for line in _eval_file(eval_dir, "scifact", "qrels", f"{split}.tsv").read_text().splitlines()[1:]:
        query, doc, score = line.split()
        relevance[query][doc] = int(score)
    return relevance


def _scifact_claims(eval_dir: Path, split: str) -> list[tuple[str, dict[str, int]]]:
    relevance = _scifact_ids(eval_dir, split)
    return [(q["text"], relevance[q["_id"]]) for q in _jsonl(eval_dir, "scifact", "queries.jsonl") if q["_id"] in relevance]


def _cmrc_paragraphs(eval_dir: Path, split: str) -> list[dict]:
    """CMRC2018 items with even index are dev, odd are test (../shared/eval/README.md)."""
    data = _load(eval_dir, "cmrc2018", "cmrc2018_dev.json")["data"]
    return [item["paragraphs"][0] for item in data[(0 if split == "dev" else 1) :: 2]]


def _spider(eval_dir: Path, split: str) -> list[dict]:
    return _load(eval_dir, "spider", f"{split}.json")


KAGGLE_DATABASES = ("GeoNuclearData", "GreaterManchesterCrime", "StudentMathScore")


def _cspider(eval_dir: Path, split: str) -> list[dict]:
    """CSpider (MSpider's Chinese) items on the databases of Spider's `split` (wta_1, not bundled, is left out)."""
    databases = {q["db_id"] for q in _spider(eval_dir, split)}
    return [item for item in _load(eval_dir, "mspider", "dev.json") if item["db_id"] in databases]


def cspider_router_questions(eval_dir: Path, split: str) -> list[dict]:
    """Every CSpider item of the split twice, in Chinese (`sql-zh`) and in English (`sql-en`): the same questions
    in both languages, so the routing gap between them is measured on the same items."""
    items = _cspider(eval_dir, split)
    return [{"question": q["question"][lang], "expected_source": q["db_id"], "group": f"sql-{lang}"} for lang in ("zh", "en") for q in items]


def cspider_sql_questions(eval_dir: Path, split: str, lang: str = "zh") -> list[dict]:
    """CSpider items as SQL suite questions in `lang`, each with its gold SQL (Spider's)."""
    return [
        {"question": q["question"][lang], "db": q["db_id"], "gold_sql": q["mr"]["sql"], "set": f"cspider-{lang}"} for q in _cspider(eval_dir, split)
    ]


def kaggle_questions(eval_dir: Path, split: str) -> list[dict]:
    """KaggleDBQA: each database's few-shot questions are the dev split, its test questions the test split."""
    part = "fewshot" if split == "dev" else "test"
    return [q for db in KAGGLE_DATABASES for q in _load(eval_dir, "kaggle_dbqa", "examples", f"{db}_{part}.json")]


def _rgb(eval_dir: Path, split: str) -> list[tuple[str, dict]]:
    """RGB news questions: zh_refine has both splits; en_fact is dev only."""
    sets = [("zh", f"zh_refine.{split}.jsonl")] + ([("en", "en_fact.jsonl")] if split == "dev" else [])
    return [(lang, record) for lang, name in sets for record in _jsonl(eval_dir, "rgb", name)]


def _sample(items: list, rng: random.Random, limit: int = PER_GROUP) -> list:
    return rng.sample(items, min(limit, len(items)))


def router_questions(eval_dir: Path, split: str) -> list[dict]:
    """Spider questions -> their db_id; SciFact claims -> scifact; CMRC2018 -> cmrc2018; RGB news -> web."""
    rng = random.Random(0)
    groups = {
        "sql-en": [(q["question"], q["db_id"]) for q in _spider(eval_dir, split)],
        "docs-en": [(text, "scifact") for text, _ in _scifact_claims(eval_dir, split)],
        "docs-zh": [(p["qas"][0]["question"], "cmrc2018") for p in _cmrc_paragraphs(eval_dir, split)],
        "web-en": [(r["query"], "web") for lang, r in _rgb(eval_dir, split) if lang == "en"],
        "web-zh": [(r["query"], "web") for lang, r in _rgb(eval_dir, split) if lang == "zh"],
    }
    return [{"question": q, "expected_source": source, "group": group} for group, pairs in groups.items() for q, source in _sample(pairs, rng)]


def sql_questions(eval_dir: Path, split: str) -> list[dict]:
    """Spider and KaggleDBQA questions over data/eval-sql-sources.yaml, each tagged with its `set`."""
    sets = {"spider": _spider(eval_dir, split), "kaggledbqa": kaggle_questions(eval_dir, split)}
    return [{"question": q["question"], "db": q["db_id"], "gold_sql": q["query"], "set": name} for name, qs in sets.items() for q in qs]


def retrieval_questions(eval_dir: Path, split: str) -> list[dict]:
    """SciFact claims with BEIR qrels over `scifact`; CMRC2018 questions with their paragraph over `cmrc2018`;
    RGB zh_refine questions with their positive passages over `rgb_zh_SPLIT` (all of the split's passages)."""
    rng = random.Random(0)
    scifact = [{"question": text, "source": "scifact", "relevant": rel} for text, rel in _scifact_claims(eval_dir, split)]
    cmrc = [
        {"question": qa["question"], "source": "cmrc2018", "relevant": {p["id"]: 1}, "answer": qa["answers"][0]["text"]}
        for p in _cmrc_paragraphs(eval_dir, split)
        for qa in p["qas"][:1]
    ]
    rgb = [
        {"question": r["query"], "source": f"rgb_zh_{split}", "relevant": {passage_id(p): 1 for p in r["positive"]}}
        for lang, r in _rgb(eval_dir, split)
        if lang == "zh" and r["positive"]
    ]
    return scifact + _sample(cmrc, rng) + rgb


def _crag(eval_dir: Path) -> list[dict]:
    """CRAG's 10 sample questions (dev only), answered from the search snippets of their 5 web pages.

    Snippets, not the pages: the pages are raw HTML of up to 250 kB each. A question whose gold answer is
    missing ("nan") cannot be scored and is left out. The sample stores `alternative_answers` as a JSON string.
    """
    with bz2.open(_eval_file(eval_dir, "crag_sample", "dev_data.jsonl.bz2"), "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [
        {
            "question": r["query"],
            "answers": [r["answer"], *json.loads(r["alternative_answers"] or "[]")],
            "set": "crag",
            "task": "web",
            "passages": [f"{p['page_name']}\n{p['page_snippet']}" for p in r["search_results"]],
            "answerable": True,
        }
        for r in rows
        if r["answer"] and r["answer"] != "nan"
    ]


def _rgb_answers(answer) -> list:
    return answer if isinstance(answer, list) else [answer]


def answers_questions(eval_dir: Path, split: str, passages: int = 5, noise: int = 2) -> list[dict]:
    """RGB noise robustness (positives plus `noise` negatives) and negative rejection (negatives only);
    SQuAD 2.0 subset (dev only: answerable and unanswerable); CMRC2018 (the question's own paragraph); CRAG (dev only)."""
    rng = random.Random(0)
    items = []
    for lang, r in _rgb(eval_dir, split):
        if len(r["positive"]) >= passages - noise and len(r["negative"]) >= passages:
            mixed = r["positive"][: passages - noise] + r["negative"][:noise]
            rng.shuffle(mixed)
            base = {"question": r["query"], "answers": _rgb_answers(r["answer"]), "set": f"rgb-{lang}"}
            items.append({**base, "passages": mixed, "answerable": True, "task": "noise"})
            items.append({**base, "passages": r["negative"][:passages], "answerable": False, "task": "reject"})
    if split == "dev":
        for article in _load(eval_dir, "squad_v2_subset", "dev-v2.0.first2articles.json")["data"]:
            for p in article["paragraphs"]:
                for qa in p["qas"][:2]:
                    answers = [a["text"] for a in qa["answers"]]
                    items.append(
                        {
                            "question": qa["question"],
                            "answers": answers,
                            "set": "squad2",
                            "passages": [p["context"]],
                            "answerable": not qa.get("is_impossible", False),
                            "task": "reading",
                        }
                    )
        items.extend(_crag(eval_dir))
    for p in _cmrc_paragraphs(eval_dir, split):
        qa = p["qas"][0]
        items.append(
            {
                "question": qa["question"],
                "answers": [a["text"] for a in qa["answers"]],
                "set": "cmrc2018",
                "passages": [p["context"]],
                "answerable": True,
                "task": "reading",
            }
        )
    by_group: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        item["group"] = f"{item['set']}/{item['task']}"
        by_group[item["group"]].append(item)
    return [item for group in by_group.values() for item in _sample(group, rng, 100)]


def _dialogues(eval_dir: Path, name: str, split: str) -> list[dict]:
    """SParC or CoSQL interactions on the split's Spider databases (the README's split); CoSQL's "|" joins a user's
    clarification to the question."""
    databases = {q["db_id"] for q in _spider(eval_dir, split)}
    items = []
    for n, record in enumerate(_load(eval_dir, name, "dev.json")):
        if record["database_id"] in databases:
            turns = [{"utterance": " ".join(t["utterance"].replace("|", " ").split()), "query": t["query"]} for t in record["interaction"]]
            items.append({"set": name, "db": record["database_id"], "turns": turns, "key": f"{name}:{n}:{record['database_id']}"})
    return items


def _cast(eval_dir: Path, split: str) -> list[dict]:
    """TREC CAsT topics: 2020 (dev) or 2021 (test, with each turn's canonical passage)."""
    year = "2020" if split == "dev" else "2021"
    topics = _load(eval_dir, "trec_cast", f"{year}_manual_evaluation_topics_v1.0.json")
    return [
        {
            "set": "cast",
            "turns": [
                {"number": t["number"], "raw": t["raw_utterance"], "manual": t["manual_rewritten_utterance"], "passage": t.get("passage")}
                for t in topic["turn"]
            ],
            "key": f"cast:{year}:{topic['number']}",
        }
        for topic in topics
    ]


def chat_questions(eval_dir: Path, split: str) -> list[dict]:
    """Conversations: SParC and CoSQL interactions (follow-up SQL) and TREC CAsT topics (standalone rewrites), in a
    fixed shuffled order so that a --limit takes many databases; then the Chinese SQL dialogues and CMRC2018 pairs
    shipped in evals/questions/ (evals/zh_follow_ups.py), in their own order."""
    rng = random.Random(0)
    items = []
    for part in (_dialogues(eval_dir, "sparc", split), _dialogues(eval_dir, "cosql", split), _cast(eval_dir, split)):
        rng.shuffle(part)
        items += part
    for name in ("zh-sql", "zh-docs"):
        shipped = QUESTIONS_DIR / f"chat-{name}.{split}.jsonl"
        items += read_jsonl(shipped) if shipped.is_file() else []
    return items


def metadata_questions(eval_dir: Path, split: str) -> list[dict]:
    """The dev questions ship in evals/questions/metadata.dev.jsonl; the test set is held apart by whoever
    measures, so it comes only from `--questions`."""
    raise EvalDataError(f"the metadata suite's {split} questions are held apart: pass them with --questions FILE")


BUILDERS = {
    "metadata": metadata_questions,
    "router": router_questions,
    "sql": sql_questions,
    "retrieval": retrieval_questions,
    "answers": answers_questions,
    "chat": chat_questions,
}
REQUIRED = {
    "router": ("question", "expected_source"),
    "sql": ("question", "db", "gold_sql"),
    "retrieval": ("question", "source", "relevant"),
    "answers": ("question", "answers", "passages", "answerable"),
    "chat": ("set", "turns", "key"),
    "metadata": ("question", "lang", "kind", "where", "sort", "order", "k", "count"),
}


def stratified(items: list[dict], limit: int | None, key: str) -> list[dict]:
    """The first `limit` questions in round-robin over groups, so a small slice still covers every kind."""
    if not limit or limit >= len(items):
        return items
    groups: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        groups[str(item.get(key, ""))].append(item)
    picked: list[dict] = []
    queues = [list(g) for g in groups.values()]
    while len(picked) < limit:
        for queue in queues:
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return picked


def load_questions(suite: str, split: str, questions: Path | None, eval_dir: Path = EVAL_DIR) -> tuple[list[dict], str]:
    """The suite's questions (from FILE, the shipped file, or built from the public sets) and where they came from."""
    if questions is not None:
        return require_fields(read_jsonl(questions), REQUIRED[suite], str(questions)), str(questions)
    shipped = QUESTIONS_DIR / f"{suite}.{split}.jsonl"
    if shipped.is_file():
        return read_jsonl(shipped), str(shipped.relative_to(DATA_DIR.parent))
    return BUILDERS[suite](eval_dir, split), f"../shared/eval ({suite} questions, {split} split)"


def _write(name: str, items: list[dict]) -> None:
    path = QUESTIONS_DIR / name
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    print(f"{path}: {len(items)} questions")


def main() -> None:
    """Write the shipped router question files, and CSpider's router and SQL files (the other suites build theirs
    from ../shared/eval at run time)."""
    QUESTIONS_DIR.mkdir(exist_ok=True)
    for split in SPLITS:
        _write(f"router.{split}.jsonl", router_questions(EVAL_DIR, split))
        _write(f"router-cspider.{split}.jsonl", cspider_router_questions(EVAL_DIR, split))
        for lang in ("zh", "en"):
            _write(f"sql-cspider-{lang}.{split}.jsonl", cspider_sql_questions(EVAL_DIR, split, lang))


if __name__ == "__main__":
    main()
