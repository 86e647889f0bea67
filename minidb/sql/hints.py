"""Optimizer hints: how a user overrides the planner's choice of access path or join method.

Two equivalent spellings:

* the ``hint`` argument: ``db.sql(text, hint="index")``;
* a comment at the very start of the statement, Oracle style: ``/*+ index */ SELECT ...``.
  It is cut from the text here, before the SQL parser sees it. Only a ``/*+ ... */`` comment that
  opens the statement counts; any other comment is left to the parser (which ignores it).

Several hints may be given at once, separated by spaces or commas (``/*+ scan, nested_loops */``).
Access-path hints (at most one): ``scan`` (read the whole file), ``index`` (use a non-clustered
index, or any index that restricts the table, even where the planner would scan),
``clustered_index`` (use the clustered index). Join hints (at most one): ``hash_join`` (the
default) and ``nested_loops``.

Gamma's optimizer had no hints; they are here so a lab can run the 1% and 10% selections both
ways and compare the counters with the planner's choice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from minidb.errors import MinidbError

ACCESS_HINTS = ("scan", "index", "clustered_index")
JOIN_HINTS = ("hash_join", "nested_loops")

_LEADING_HINT = re.compile(r"^\s*/\*\+(?P<body>.*?)\*/", re.DOTALL)


@dataclass(frozen=True)
class Hints:
    """The parsed hints of one statement (None: let the planner choose)."""

    access: str | None = None
    join: str | None = None

    def __str__(self) -> str:
        return ", ".join(h for h in (self.access, self.join) if h) or "none"


def split_hint_comment(text: str) -> tuple[str, str | None]:
    """Cut a leading ``/*+ ... */`` comment off ``text``; return (rest, hint body or None)."""
    m = _LEADING_HINT.match(text)
    if not m:
        return text, None
    return text[m.end():], m.group("body")


def parse_hints(*specs: str | None) -> Hints:
    """Combine hint strings (the argument and the comment) into one ``Hints``."""
    access = join = None
    for spec in specs:
        if spec is None:
            continue
        if not isinstance(spec, str):
            raise MinidbError(f"a hint is a string such as 'index' or 'scan', not {spec!r}")
        for word in re.split(r"[\s,]+", spec.strip().lower()):
            if not word:
                continue
            word = word.replace("-", "_")
            if word in ACCESS_HINTS:
                if access is not None and access != word:
                    raise MinidbError(f"conflicting hints {access!r} and {word!r}; give one access-path hint")
                access = word
            elif word in JOIN_HINTS:
                if join is not None and join != word:
                    raise MinidbError(f"conflicting hints {join!r} and {word!r}; give one join hint")
                join = word
            else:
                known = ", ".join(ACCESS_HINTS + JOIN_HINTS)
                raise MinidbError(f"unknown hint {word!r}; use one of: {known}")
    return Hints(access, join)
