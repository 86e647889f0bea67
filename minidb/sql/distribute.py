"""DISTRIBUTE: Distributed INGRES's statement that places a relation's fragments by predicates.

Distributed INGRES (Stonebraker et al. 1983, §2) lets the user say where each tuple of a
relation lives with one command per relation, in QUEL::

    distribute E at Berkeley where E.dept = "shoe"
                 at Paris    where E.dept = "toy"
                 at Boston   where E.dept != "toy" and E.dept != "shoe"
    distribute ONE-SITE at Berkeley

A site's fragment is the set of tuples that satisfy its qualification; a relation named with one
site and no qualification lives entirely at that site. minidb writes the same statement in SQL::

    DISTRIBUTE emp AT 0 WHERE dept = 'shoe'
                   AT 1 WHERE dept = 'toy'
                   AT 2 WHERE dept <> 'toy' AND dept <> 'shoe'
    DISTRIBUTE emp AT 1

The differences with the paper: the paper's sites are logical machine names (Berkeley, Paris,
Boston) that a lookup table maps to machines; here a site is a disk node's number (``2``,
``node 2`` or ``node2``). Conditions are SQL in DuckDB's dialect (``<>`` or ``!=``, strings in
single quotes; a qualifier such as ``emp.dept`` or ``E.dept`` is ignored, as there is one
relation). Keywords are case-insensitive. ``AT`` and ``WHERE`` are found outside quotes,
comments and parentheses; a column named ``at`` or ``where`` must be written in double quotes.

This module only reads the statement (``parse_distribute``) and turns it into the predicate of
every disk node (``DistributeStatement.fragments``): a node no site names gets ``FALSE`` (no
tuples), the one site of a statement without WHERE gets ``TRUE`` (the whole relation). The
parallel engine moves the tuples (``minidb.cluster.coordinator.ParallelDatabase``); the
single-node ``Database`` refuses the statement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from minidb.errors import MinidbError

#: the predicate of a disk node that holds nothing, and of a relation's only site
NO_TUPLES, ALL_TUPLES = "FALSE", "TRUE"

_FIRST_WORD = re.compile(r"\s*(?:/\*.*?\*/\s*|--[^\n]*\n\s*)*([A-Za-z_]\w*)", re.DOTALL)
# the pieces of the statement's text that may hide the words AT and WHERE
_TOKEN = re.compile(r"""
      (?P<string>'(?:[^']|'')*')        # a text constant; '' is a quote inside it
    | (?P<ident>"(?:[^"]|"")*")         # a quoted name
    | (?P<comment>--[^\n]*|/\*.*?\*/)
    | (?P<word>[A-Za-z_]\w*)
    | (?P<open>\()
    | (?P<close>\))
    | (?P<other>.)
""", re.VERBOSE | re.DOTALL)
_SITE = re.compile(r"(?:node\s*)?(\d+)", re.IGNORECASE)
_NAME = re.compile(r'[A-Za-z_]\w*|"(?:[^"]|"")+"')
_EXAMPLE = ("DISTRIBUTE emp AT 0 WHERE dept = 'shoe' AT 1 WHERE dept <> 'shoe', "
            "or DISTRIBUTE emp AT 1 for the whole table on node 1")


@dataclass(frozen=True)
class Site:
    """One ``AT node [WHERE condition]`` of the statement; ``condition`` is None without WHERE."""

    node: int
    condition: str | None


@dataclass(frozen=True)
class DistributeStatement:
    """``DISTRIBUTE table AT node WHERE condition ...``: the table and its sites, in order."""

    table: str
    sites: tuple[Site, ...]

    def fragments(self, disk_nodes: int) -> dict[int, str]:
        """The SQL predicate of each disk node 0..``disk_nodes``-1: a named site's condition
        (``TRUE`` for a lone site without WHERE), ``FALSE`` for a node no site names. A site
        that is not a disk node is an error naming the disk nodes."""
        for site in self.sites:
            if site.node >= disk_nodes:
                nodes = "node 0" if disk_nodes == 1 else f"nodes 0..{disk_nodes - 1}"
                raise MinidbError(f"DISTRIBUTE {self.table} AT {site.node}: there is no disk node "
                                  f"{site.node}; this database stores tables on {nodes}")
        named = {s.node: ALL_TUPLES if s.condition is None else s.condition for s in self.sites}
        return {n: named.get(n, NO_TUPLES) for n in range(disk_nodes)}

    def describe(self) -> str:
        return f"DISTRIBUTE {self.table} " + " ".join(
            f"AT {s.node}" + ("" if s.condition is None else f" WHERE {s.condition}")
            for s in self.sites)


def is_distribute(text: str) -> bool:
    """Whether ``text`` is a DISTRIBUTE statement (its first word, case-insensitive)."""
    m = _FIRST_WORD.match(text) if isinstance(text, str) else None
    return m is not None and m.group(1).lower() == "distribute"


def parse_distribute(text: str) -> DistributeStatement:
    """Read ``DISTRIBUTE table AT site [WHERE condition] {AT site [WHERE condition]}``.

    Only the shape is checked here (a table name, at least one site, each a number, no site
    twice, a condition after every WHERE, and with several sites a WHERE for each); the table,
    its columns and the node numbers are checked against the database by the engine. Mistakes
    raise a one-line ``MinidbError`` that shows the statement's right form.
    """
    body = _strip(text)
    tokens = _top_level_words(body)
    if not tokens or tokens[0][0] != "distribute":
        raise MinidbError(f"not a DISTRIBUTE statement: {text!r}")
    at_words = [(start, end) for word, start, end in tokens if word == "at"]
    head = body[tokens[0][2]:at_words[0][0] if at_words else len(body)].strip()
    if not head:
        raise MinidbError(f"SQL syntax error: DISTRIBUTE needs a table name; write {_EXAMPLE}")
    if not _NAME.fullmatch(head):
        raise MinidbError(f"SQL syntax error: DISTRIBUTE {head}: expected one table name and then "
                          f"AT; write {_EXAMPLE}")
    table = head[1:-1].replace('""', '"') if head.startswith('"') else head
    if not at_words:
        raise MinidbError(f"DISTRIBUTE {table} names no site; write {_EXAMPLE}")
    sites: list[Site] = []
    for i, (_, end) in enumerate(at_words):
        stop = at_words[i + 1][0] if i + 1 < len(at_words) else len(body)
        sites.append(_site(table, body[end:stop], [(s - end, e - end) for w, s, e in tokens
                                                   if w == "where" and end <= s < stop]))
    seen: set[int] = set()
    for site in sites:
        if site.node in seen:
            raise MinidbError(f"DISTRIBUTE {table} names node {site.node} twice; give each node "
                              "one site (join its conditions with OR)")
        seen.add(site.node)
    bare = [s.node for s in sites if s.condition is None]
    if len(sites) > 1 and bare:
        raise MinidbError(f"DISTRIBUTE {table} AT {bare[0]} has no WHERE: with several sites, "
                          "each needs a condition (AT n alone puts the whole table on one node)")
    return DistributeStatement(table, tuple(sites))


def _site(table: str, text: str, wheres: list[tuple[int, int]]) -> Site:
    """One ``site [WHERE condition]``, the text after an AT (``wheres``: its WHERE words)."""
    if len(wheres) > 1:
        raise MinidbError(f"SQL syntax error: DISTRIBUTE {table} AT{text.rstrip()}: one WHERE per "
                          "site (join conditions with AND / OR)")
    where = wheres[0] if wheres else None
    place = (text if where is None else text[:where[0]]).strip()
    m = _SITE.fullmatch(place)
    if m is None:
        shown = place or "(nothing)"
        raise MinidbError(f"DISTRIBUTE {table} AT {shown}: a site is a disk node's number, written "
                          "2, node 2 or node2 (Distributed INGRES's site names such as Berkeley "
                          "stand for machines; here the machines are numbered)")
    if where is None:
        return Site(int(m.group(1)), None)
    condition = text[where[1]:].strip()
    if not condition:
        raise MinidbError(f"SQL syntax error: DISTRIBUTE {table} AT {m.group(1)} WHERE needs a "
                          "condition, such as dept = 'shoe'")
    return Site(int(m.group(1)), condition)


def _strip(text: str) -> str:
    """The statement without surrounding blanks and one trailing semicolon."""
    body = text.strip()
    return body[:-1].rstrip() if body.endswith(";") else body


def _top_level_words(text: str) -> list[tuple[str, int, int]]:
    """The words DISTRIBUTE, AT and WHERE outside quotes, comments and parentheses, as
    (lower-case word, start, end); an unclosed quote or parenthesis is an error."""
    out: list[tuple[str, int, int]] = []
    depth = 0
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth < 0:
                raise MinidbError("SQL syntax error: DISTRIBUTE has a ')' without its '('")
        elif kind == "other" and m.group() in "'\"":
            raise MinidbError(f"SQL syntax error: DISTRIBUTE has an unclosed quote {m.group()} at "
                              f"{text[m.start():m.start() + 20]!r}")
        elif kind == "word" and depth == 0 and m.group().lower() in ("distribute", "at", "where"):
            out.append((m.group().lower(), m.start(), m.end()))
    if depth > 0:
        raise MinidbError("SQL syntax error: DISTRIBUTE has a '(' without its ')'")
    return out


__all__ = ["ALL_TUPLES", "NO_TUPLES", "DistributeStatement", "Site", "is_distribute",
           "parse_distribute"]
