"""Chinese follow-up data, which ../shared/eval lacks: built from its public sets by rule, or by hand translation
kept beside the rule that joins it to the gold, and written to evals/questions/ (`python -m evals.zh_follow_ups`).

- Documents (`zh-docs`): two questions on one CMRC2018 paragraph that both name the paragraph's title; the second
  is rewritten to point back at it with 他/她 (a person), 这位/这座/这家…/该/此 + the title's kind, 它 or 其, or
  with the subject left out (ellipsis). The gold answer is CMRC's span for the second question, whose original
  wording is the gold standalone question. Dev from even-index paragraphs, test from odd ones (the README's split).
- SQL (`zh-sql`): SParC and CoSQL interactions translated by hand (`zh-sql-translations.<split>.json`), their
  gold SQL taken from ../shared/eval by key so it is never retyped.
- Single questions (`zh-single`): CMRC2018 first questions of the split and the hand-translated Spider
  questions: the check must leave them alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from evals.datasets import EVAL_DIR, QUESTIONS_DIR, _cmrc_paragraphs, _dialogues, _load

# A title ending in one of these names its own kind: "广茂铁路" -> "这条铁路" / "该铁路". Longest first, so
# "火车站" wins over "站"; each kind with the classifier Chinese counts it by.
KINDS = {
    "火车站": "座",
    "铁路": "条",
    "公路": "条",
    "车站": "座",
    "号线": "条",
    "线": "条",
    "站": "座",
    "大学": "所",
    "学院": "所",
    "中学": "所",
    "小学": "所",
    "学校": "所",
    "公司": "家",
    "集团": "家",
    "银行": "家",
    "医院": "家",
    "酒店": "家",
    "俱乐部": "家",
    "地震": "场",
    "战役": "场",
    "战争": "场",
    "比赛": "场",
    "选举": "场",
    "火山": "座",
    "广场": "座",
    "公园": "座",
    "机场": "座",
    "教堂": "座",
    "大教堂": "座",
    "寺": "座",
    "桥": "座",
    "山": "座",
    "岛": "座",
    "城": "座",
    "大厦": "座",
    "河": "条",
    "江": "条",
    "街": "条",
    "路": "条",
    "湖": "个",
    "县": "个",
    "市": "个",
    "镇": "个",
    "村": "个",
    "省": "个",
    "频道": "个",
    "组织": "个",
    "游戏": "款",
    "电影": "部",
    "小说": "部",
    "条约": "项",
    "乐队": "支",
}
# Words of a paragraph's opening sentence that say its subject is a person, and the role named after 这位.
PERSON_ROLES = (
    "运动员", "演员", "歌手", "政治家", "作家", "导演", "画家", "主持人", "教授", "学者", "诗人", "艺人", "模特",
    "官员", "球员", "选手", "国王", "皇帝", "公主", "皇后", "将领", "将军", "音乐家", "科学家", "人物",
)  # fmt: skip
PERSON_OPENING_CHARS = 120


def _person(title: str, context: str) -> str | None:
    """Whether the paragraph is about a person, and the role its opening gives them ("巴西足球运动员" -> "运动员";
    "" when it names none): it speaks of someone as 他 or 她 (not 其他, 他们, 吉他) and is not about a work
    (《…》), a species (学名) or a thing whose name says its kind."""
    singular = len(re.findall(r"(?<![其吉])[他她](?![们人])", context))
    opening = context[:PERSON_OPENING_CHARS]
    if not singular or f"《{title}》" in context or "学名" in opening or _kind(title):
        return None
    return next((role for role in PERSON_ROLES if role in opening), "")


def _kind(title: str) -> tuple[str, str] | None:
    for kind in sorted(KINDS, key=len, reverse=True):
        if title.endswith(kind) and len(title) > len(kind):
            return kind, KINDS[kind]
    return None


def _pointers(title: str, context: str) -> list[tuple[str, str]]:
    """The ways the paragraph's subject can be pointed back at, each (name of the form, the words): they are
    taken in turn over the pairs, so every form appears."""
    role = _person(title, context)
    if role is not None:
        pronoun = "她" if len(re.findall(r"她(?!们)", context)) > len(re.findall(r"(?<![其吉])他(?![们人])", context)) else "他"
        this_one = [("这位", f"这位{role}")] if role else []
        return [(pronoun, pronoun), *this_one, ("其", "其"), ("此", "此人"), ("ellipsis", "")]
    if kind := _kind(title):
        noun, classifier = kind
        return [("该", f"该{noun}"), ("这个", f"这{classifier}{noun}"), ("它", "它"), ("其", "其"), ("此", f"此{noun}"), ("ellipsis", "")]
    work = [("这个", "这部作品")] if f"《{title}》" in context else []
    return [("它", "它"), *work, ("其", "其"), ("ellipsis", "")]


def _point_back(question: str, title: str, form: str, words: str) -> str | None:
    """`question`, which opens with `title` (or 《title》), pointing back at it with `words` instead; None where
    the form does not fit."""
    named = f"《{title}》" if question.startswith(f"《{title}》") else title
    if not question.startswith(named) or question.count(title) != 1:
        return None
    rest = question[len(named) :]
    if form == "其":  # 其 stands for "title's": only before 的, which it absorbs
        return "其" + rest[1:] if rest.startswith("的") else None
    if form == "ellipsis":  # the subject left out: "X的职业是什么" -> "职业是什么"
        rest = rest.removeprefix("的")
        return rest if len(rest) > 4 else None
    return words + rest


def cmrc_pairs(eval_dir: Path, split: str) -> list[dict]:
    """Pairs of questions on one paragraph, the second pointing back at the title the first one names."""
    items, turn = [], 0
    data = _load(eval_dir, "cmrc2018", "cmrc2018_dev.json")["data"]
    for article in data[(0 if split == "dev" else 1) :: 2]:
        title, paragraph = article["title"], article["paragraphs"][0]
        named = [q for q in paragraph["qas"] if q["question"].count(title) == 1]
        if len(named) < 2:
            continue
        first, pointers = named[0], _pointers(title, paragraph["context"])
        for second in named[1:]:
            # Forms taken in turn; the subject left out only where its turn comes, so pronouns and demonstratives
            # (the forms the check missed) make most of the set.
            tried = pointers[turn % len(pointers) :] + pointers[: turn % len(pointers)]
            tried = tried[:1] + [(form, w) for form, w in tried[1:] if form != "ellipsis"]
            found = next(((form, text) for form, w in tried if (text := _point_back(second["question"], title, form, w))), None)
            if found is None:
                continue
            turn += 1
            form, follow_up = found
            items.append(
                {
                    "set": "zh-docs",
                    "key": f"zh-docs:{paragraph['id']}",
                    "source": "cmrc2018",
                    "title": title,
                    "pointer": form,
                    "turns": [
                        {"utterance": first["question"], "standalone": first["question"], "answers": [a["text"] for a in first["answers"]]},
                        {"utterance": follow_up, "standalone": second["question"], "answers": [a["text"] for a in second["answers"]]},
                    ],
                }
            )
            break
    return items


def _translations(split: str) -> dict:
    path = QUESTIONS_DIR / f"zh-sql-translations.{split}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"dialogues": {}, "singles": []}


def zh_sql_dialogues(eval_dir: Path, split: str) -> list[dict]:
    """The translated SParC/CoSQL interactions, each turn's gold SQL and English words from ../shared/eval."""
    translated = _translations(split)["dialogues"]
    upstream = {i["key"]: i for name in ("sparc", "cosql") for i in _dialogues(eval_dir, name, split)}
    items = []
    for key, chinese in translated.items():
        turns = upstream[key]["turns"]
        if len(turns) != len(chinese):
            raise ValueError(f"{key}: {len(chinese)} translated turns for {len(turns)}")
        zh_turns = [{"utterance": zh, "english": t["utterance"], "query": t["query"]} for zh, t in zip(chinese, turns)]
        items.append({"set": "zh-sql", "db": upstream[key]["db"], "key": f"zh-{key}", "turns": zh_turns})
    return items


def zh_singles(eval_dir: Path, split: str) -> list[dict]:
    """Questions that stand alone: CMRC2018's first question of each paragraph and the translated Spider ones."""
    cmrc = [{"question": p["qas"][0]["question"], "from": "cmrc2018"} for p in _cmrc_paragraphs(eval_dir, split)]
    spider = [{"question": zh, "english": en, "db": db, "from": "spider"} for db, en, zh in _translations(split)["singles"]]
    return [{"set": "zh-single", **q} for q in cmrc + spider]


def main() -> None:
    for split in ("dev", "test"):
        for name, items in (
            ("zh-docs", cmrc_pairs(EVAL_DIR, split)),
            ("zh-sql", zh_sql_dialogues(EVAL_DIR, split)),
            ("zh-single", zh_singles(EVAL_DIR, split)),
        ):
            if not items:
                continue
            path = QUESTIONS_DIR / f"chat-{name}.{split}.jsonl"
            path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
            print(f"{path}: {len(items)}")


if __name__ == "__main__":
    main()
