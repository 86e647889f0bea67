"""The SQL layer: parse (sqlglot), translate to minidb's expressions, plan, run.

``hints.py`` reads optimizer hints, ``translate.py`` turns a statement into a logical
description (names resolved, types checked, unsupported constructs rejected), ``planner.py``
chooses access paths and join methods as the Gamma optimizer did and builds the iterators,
``execute.py`` runs a statement and ``operators.py`` holds the two iterators only SQL needs
(``Limit``, ``Materialize``). ``distribute.py`` reads Distributed INGRES's ``DISTRIBUTE``, which
only the parallel engine runs.
"""

from minidb.sql.hints import Hints, parse_hints, split_hint_comment
from minidb.sql.translate import parse, translate

__all__ = ["Hints", "parse_hints", "split_hint_comment", "parse", "translate"]
