"""Solution blocks: found, stubbed at their indentation, and refused when malformed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ag_helpers import ROOT

from autograder.markers import (
    MarkerError,
    find_blocks,
    has_marker_text,
    strip_notebook,
    strip_solutions,
)
from minidb.errors import MinidbError, NotImplementedYet

B, E = "# BEGIN SOLUTION", "# END SOLUTION"  # the tests are not released: they may spell it out

SOURCE = f'''\
class Policy:
    def victim(self, candidates):
        """Pick one of the candidates."""
        {B}: Lab 9, part Z (policy): pick the first candidate
        first = candidates[0]
        return first
        {E}

    def other(self):
        return 1


def helper(x):
    if x:
        {B}
        return x + 1
        {E}
    return 0
'''


def test_blocks_are_replaced_by_stubs_at_their_indentation():
    stubbed, count = strip_solutions(SOURCE, "minidb/policy.py")
    assert count == 2 and not has_marker_text(stubbed)
    assert "first = candidates[0]" not in stubbed and "return x + 1" not in stubbed
    assert '        """Pick one of the candidates."""\n' \
           "        from minidb.errors import NotImplementedYet\n" \
           "        raise NotImplementedYet('Lab 9, part Z (policy): pick the first candidate " \
           "(write it in Policy.victim in minidb/policy.py)')\n\n    def other(self):" in stubbed
    namespace: dict = {}
    exec(compile(stubbed, "policy.py", "exec"), namespace)
    assert namespace["Policy"]().other() == 1
    with pytest.raises(NotImplementedYet, match=r"^Lab 9, part Z \(policy\)"):
        namespace["Policy"]().victim([3])
    with pytest.raises(NotImplementedYet, match="write helper in minidb/policy.py"):
        namespace["helper"](1)
    assert namespace["helper"](0) == 0  # code after the block is kept


def test_not_implemented_yet_is_both_a_minidb_error_and_not_implemented():
    err = NotImplementedYet("Lab 1, part B (Clock): ...")
    assert isinstance(err, MinidbError) and isinstance(err, NotImplementedError)


@pytest.mark.parametrize(("text", "message"), [
    (f"def f():\n    {B}\n    return 1\n", "m.py, line 2: this solution block is never closed"),
    (f"def f():\n    {B}\n    {B}\n    {E}\n    {E}\n",
     "m.py, line 3: a solution block opens inside the block opened at line 2"),
    (f"x = 1\n{E}\n", "m.py, line 2: a solution block closes but none is open"),
    (f"def f():\n    {B}\nx = 1\n    {E}\n", "m.py, line 3: this line of the solution block opened "
                                          "at line 2 is indented less than its opening marker"),
    (f"{B} here\n{E}\n", "m.py, line 1: write the opening marker alone or followed by ':'"),
])
def test_malformed_blocks_name_the_file_and_line(text, message):
    with pytest.raises(MarkerError) as caught:
        strip_solutions(text, "m.py")
    assert str(caught.value).startswith(message)


def test_notebook_code_cells_are_stubbed_and_lose_their_outputs():
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": [f"Text about {B}\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 3, "outputs": [{"text": "42"}],
         "source": ["def answer():\n", f"    {B}: Lab 1, part C: the answer\n",
                    "    return 42\n", f"    {E}\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 4, "outputs": [{"text": "1"}],
         "source": "print(1)"},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text, count = strip_notebook(json.dumps(nb), "labs/lab.ipynb")
    out = json.loads(text)
    assert count == 1
    assert out["cells"][0] == nb["cells"][0]  # markdown is not code: left as it is
    cell = out["cells"][1]
    assert cell["outputs"] == [] and cell["execution_count"] is None
    assert cell["source"][1:] == ["    from minidb.errors import NotImplementedYet\n",
                                  "    raise NotImplementedYet('Lab 1, part C: the answer (write "
                                  "it in answer in labs/lab.ipynb, cell 2)')\n"]
    assert out["cells"][2] == nb["cells"][2]
    with pytest.raises(MarkerError, match=r"labs/lab.ipynb, cell 1, line 1: this solution block"):
        strip_notebook(json.dumps({"cells": [{"cell_type": "code", "source": f"{B}\n"}]}),
                       "labs/lab.ipynb")


def test_the_reference_code_marks_its_lab_parts_and_keeps_its_docstrings():
    clock = (ROOT / "minidb" / "buffer" / "clock.py").read_text()
    partitioners = (ROOT / "minidb" / "parallel" / "partitioners.py").read_text()
    assert [b.hint.split(":")[0] for b in find_blocks(clock, "clock.py")] == \
        ["Lab 1, part B (Clock)"] * 3
    assert [b.hint.split(":")[0] for b in find_blocks(partitioners, "partitioners.py")] == \
        ["Lab 1, part A (range-uniform partitioner)"]
    for text in (clock, partitioners):
        lines = text.splitlines()
        for block in find_blocks(text, "x"):
            assert '"""' not in "\n".join(lines[block.begin - 1 : block.end])
            start = max(i for i in range(block.begin) if lines[i].lstrip().startswith("def "))
            assert '"""' in "\n".join(lines[start : block.begin - 1])  # documented above it


def test_the_marker_module_holds_no_marker_text():
    assert not has_marker_text((ROOT / "autograder" / "markers.py").read_text())
    assert not has_marker_text((ROOT / "autograder" / "README.md").read_text())
    assert has_marker_text(Path(__file__).read_text())


def test_a_hint_naming_a_file_says_where_the_stub_is_rather_than_where_to_write():
    text = f"def fit(self):\n    {B}: Lab 1, part A: write yours in labs/x/partitioner.py\n" \
           f"    return 1\n    {E}\n"
    stubbed, count = strip_solutions(text, "minidb/p.py")
    assert count == 1
    assert "Lab 1, part A: write yours in labs/x/partitioner.py [stub: fit in minidb/p.py]" \
        in stubbed and "write it in" not in stubbed
