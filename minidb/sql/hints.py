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
default), ``nested_loops`` (any predicate), and the name of any registered join plug-in
(``simple_hash``, ``grace_hash``, ``hybrid_hash``, ``sort_merge``, ``block_nested_loops``, or a
student's own: ``minidb/exec/join/base.py``), which then runs every equi-join of the statement.

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


def join_algorithms() -> list[str]:
    """The registered join plug-ins (``minidb/exec/join``): each name is also a join hint."""
    from minidb.plugins import names

    return names("join")


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
            elif word in JOIN_HINTS or word in join_algorithms():
                if join is not None and join != word:
                    raise MinidbError(f"conflicting hints {join!r} and {word!r}; give one join hint")
                join = word
            else:
                known = ", ".join(ACCESS_HINTS + JOIN_HINTS
                                  + tuple(n for n in join_algorithms() if n not in JOIN_HINTS))
                raise MinidbError(f"unknown hint {word!r}; use one of: {known}")
    return Hints(access, join)


def check_join_choice(join: str | None) -> str | None:
    """A ``join=`` option (``connect``, an experiment): a registered join's name, or None."""
    if join is None:
        return None
    if not isinstance(join, str):
        raise MinidbError(f"join must be the name of a join algorithm, not {join!r}")
    from minidb.plugins import lookup

    lookup("join", join)  # one line naming the choices when it is unknown
    return join.lower()


def with_default_join(hints: Hints, join: str | None) -> Hints:
    """``hints`` with the database's join algorithm when the statement names none."""
    if join is None or hints.join is not None:
        return hints
    return Hints(hints.access, join)


def join_class(hints: Hints):
    """The join plug-in class a statement's hints choose, or None (the planner's default)."""
    if hints.join is None or hints.join == "nested_loops":
        return None
    from minidb.plugins import lookup

    return lookup("join", hints.join)
