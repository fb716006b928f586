"""Which language a text is in, as far as ragrouter needs to know: Chinese or not."""


def has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)
