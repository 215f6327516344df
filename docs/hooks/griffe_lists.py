"""Griffe extension for the API reference: the docstrings' lists render as lists.

The docstrings write a heading line and its list without a blank line between them
(`**Arguments:**` then `- x: ...`), which reads well in `help()`; Markdown needs the blank line,
so this inserts it before the first item of every list that follows a line of text.
"""

import re

import griffe

_ITEM = re.compile(r"^\s*(?:[-*] |\d+\. )")


def blank_before_lists(text: str) -> str:
    """`text` with a blank line inserted before each list that directly follows a text line."""
    out = []
    for line in text.split("\n"):
        if _ITEM.match(line) and out and out[-1].strip() and not _ITEM.match(out[-1]):
            if not out[-1].startswith((" ", "\t")):  # not a list item's continuation
                out.append("")
        out.append(line)
    return "\n".join(out)


class BlankBeforeLists(griffe.Extension):
    """Applies `blank_before_lists` to every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = blank_before_lists(obj.docstring.value)
