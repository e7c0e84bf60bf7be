"""The code blocks of a benchmark's guide that load a release's compat/ files: the test
runs them as a user would copy them (tests/test_conformance.py)."""
import re
import textwrap
from typing import List

_BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.M | re.S)


def python_blocks(markdown: str) -> List[str]:
    """Every ```python block (indented ones inside a list too), dedented."""
    return [textwrap.dedent(body) for _, body in _BLOCK.findall(markdown)]


def compat_snippets(guide: str, release_name: str) -> List[str]:
    """The blocks that read `releases/<release_name>/...` compat/ files."""
    with open(guide, encoding="utf-8") as f:
        blocks = python_blocks(f.read())
    return [b for b in blocks if f"releases/{release_name}/" in b and "compat" in b]
