"""Libraries' DEBUG lines stay out of a user's terminal: jieba's dictionary loading among them."""

import subprocess
import sys


def test_jieba_says_nothing_while_building_its_dictionary() -> None:
    code = "import engines, jieba; jieba.lcut('远程办公的规定是什么')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "prefix dict" not in result.stderr
