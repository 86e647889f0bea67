"""Solution blocks: find them in reference sources and replace them by stubs for students.

A solution block is a run of lines between two comment lines, the opening one reading
BEGIN SOLUTION (optionally followed by a colon and a hint: the message the student will get)
and the closing one END SOLUTION, each after a ``#``. The student release replaces the whole
block, markers included, by two lines at the indentation of the opening marker: a local import of
``minidb.errors.NotImplementedYet`` and a ``raise`` of it whose message is the hint (or, without
one, says which function of which file is to be written). Docstrings stay outside the blocks, so
the student version keeps its documentation.

The same markers work in Python modules, in jupytext ``py:percent`` scripts (they are Python) and
in the code cells of Jupyter notebooks. A block left open, a block opened inside another, a
closing marker without an opening one, or a line of the block indented less than its opening
marker is an error naming the file and the line.

The marker text is assembled below rather than written out, so this module itself holds no
marker and the release can check that no marker text is left anywhere.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from minidb.errors import MinidbError

WORD = "SOLUTION"
BEGIN_TEXT = f"# BEGIN {WORD}"
END_TEXT = f"# END {WORD}"

_BEGIN = re.compile(rf"^(?P<indent>[ \t]*)#[ \t]*BEGIN {WORD}\b(?P<rest>.*?)[ \t]*$")
_END = re.compile(rf"^[ \t]*#[ \t]*END {WORD}\b(?P<rest>.*?)[ \t]*$")
_DEF = re.compile(r"^(?P<indent>[ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(?P<name>\w+)")


class MarkerError(MinidbError):
    """A solution block is malformed; the message names the file and the line."""


@dataclass(frozen=True)
class Block:
    """One solution block: 1-based line numbers of its markers, its indentation and its hint."""

    begin: int
    end: int
    indent: str
    hint: str | None


def find_blocks(text: str, where: str) -> list[Block]:
    """The solution blocks of ``text`` in order; ``where`` names the source in error messages."""
    blocks: list[Block] = []
    lines = text.splitlines()
    open_at: int | None = None
    indent, hint = "", None
    for number, line in enumerate(lines, start=1):
        begin, end = _BEGIN.match(line), _END.match(line)
        if begin:
            if open_at is not None:
                raise MarkerError(
                    f"{where}, line {number}: a solution block opens inside the block opened at "
                    f"line {open_at}; close that one first"
                )
            rest = begin.group("rest")
            if rest and not rest.startswith(":"):
                raise MarkerError(
                    f"{where}, line {number}: write the opening marker alone or followed by "
                    f"':' and a hint, not {line.strip()!r}"
                )
            open_at, indent = number, begin.group("indent")
            hint = (rest[1:].strip() or None) if rest else None
        elif end:
            if open_at is None:
                raise MarkerError(f"{where}, line {number}: a solution block closes but none is open")
            if end.group("rest"):
                raise MarkerError(
                    f"{where}, line {number}: the closing marker takes nothing after it, "
                    f"found {line.strip()!r}"
                )
            blocks.append(Block(open_at, number, indent, hint))
            open_at = None
        elif open_at is not None and line.strip() and not line.startswith(indent):
            raise MarkerError(
                f"{where}, line {number}: this line of the solution block opened at line "
                f"{open_at} is indented less than its opening marker"
            )
    if open_at is not None:
        raise MarkerError(f"{where}, line {open_at}: this solution block is never closed")
    return blocks


def _enclosing(lines: list[str], index: int, indent: str) -> str | None:
    """Dotted name of the functions and classes around line ``index`` (0-based), if any."""
    names: list[str] = []
    width = len(indent)
    for line in reversed(lines[:index]):
        m = _DEF.match(line)
        if m and len(m.group("indent")) < width:
            names.append(m.group("name"))
            width = len(m.group("indent"))
            if width == 0:
                break
    return ".".join(reversed(names)) or None


def stub_lines(block: Block, where: str, enclosing: str | None) -> list[str]:
    """The two lines that take the place of ``block`` in the student release."""
    place = f"{enclosing} in {where}" if enclosing else where
    if block.hint and ".py" in block.hint:  # the hint says where the student writes it
        message = f"{block.hint} [stub: {place}]"
    elif block.hint:
        message = f"{block.hint} (write it in {place})"
    else:
        message = f"not written yet: this is part of a lab assignment; write {place}"
    return [
        f"{block.indent}from minidb.errors import NotImplementedYet",
        f"{block.indent}raise NotImplementedYet({message!r})",
    ]


def strip_solutions(text: str, where: str) -> tuple[str, int]:
    """``text`` with every solution block replaced by its stub, and the number of blocks."""
    blocks = find_blocks(text, where)
    if not blocks:
        return text, 0
    lines = text.splitlines()
    out: list[str] = []
    previous = 0
    for block in blocks:
        out.extend(lines[previous : block.begin - 1])
        out.extend(stub_lines(block, where, _enclosing(lines, block.begin - 1, block.indent)))
        previous = block.end
    out.extend(lines[previous:])
    return "\n".join(out) + ("\n" if text.endswith("\n") else ""), len(blocks)


def strip_notebook(raw: str, where: str) -> tuple[str, int]:
    """A Jupyter notebook (JSON text) with the solution blocks of its code cells stubbed.

    A cell that held a block also loses its outputs and execution count: they were produced by
    the solution and would give it away.
    """
    try:
        nb = json.loads(raw)
        cells = nb["cells"]
    except (ValueError, KeyError, TypeError):
        raise MarkerError(f"{where} is not a Jupyter notebook (no JSON list of cells)") from None
    total = 0
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        stubbed, count = strip_solutions(text, f"{where}, cell {number}")
        if not count:
            continue
        total += count
        cell["source"] = stubbed.splitlines(keepends=True) if isinstance(source, list) else stubbed
        cell["outputs"] = []
        cell["execution_count"] = None
    if not total:
        return raw, 0
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n", total


def has_marker_text(text: str) -> bool:
    """True when ``text`` still holds an opening or closing marker anywhere."""
    return BEGIN_TEXT in text or END_TEXT in text
