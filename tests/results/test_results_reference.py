"""minidb/results/reference.py: finding, reading and checking the papers' reference CSVs."""

from __future__ import annotations

from pathlib import Path

import pytest
from results_env import isolate, write_reference_csv

from minidb.errors import MinidbError
from minidb.results import reference as ref
from minidb.results.reference import (
    MissingReferenceError,
    ReferenceDataError,
    load_reference,
    reference_checksum,
    snapshot_reference,
)


@pytest.fixture(autouse=True)
def reference_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty reference directory named by MINIDB_REFERENCE_DIR; tests add CSVs to it."""
    return isolate(tmp_path, monkeypatch)


@pytest.fixture
def write_csv(reference_dir: Path):
    """``write_csv(name, *lines)``: a reference CSV in the test's reference directory."""
    return lambda name, *lines, **kw: write_reference_csv(reference_dir, name, *lines, **kw)

GAMMA = (
    'gamma,Table 1,select_1pct,gamma_10000,response_time,1.25,s,ok,"p. 5","read, with care"',
    "gamma,Table 1,select_10pct,gamma_10000,response_time,,s,unreadable,p. 5,smudged",
    "gamma,Figure 2,speedup,nodes_8,speedup,,,shape,p. 7,",
    "gamma,Section 6,startup,nodes_1,time,,s,prose,p. 9,no number given",
)


def test_reference_dir_follows_the_environment(reference_dir: Path) -> None:
    assert ref.reference_dir() == reference_dir


def test_default_reference_dir_is_next_to_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINIDB_REFERENCE_DIR")
    expected = Path(ref.__file__).resolve().parents[2] / "datasets" / "reference"
    if expected.is_dir():
        assert ref.reference_dir() == expected
    else:
        with pytest.raises(MissingReferenceError, match="datasets/reference"):
            ref.reference_dir()


def test_missing_reference_dir_is_a_user_error(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIDB_REFERENCE_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(MinidbError, match="nowhere.*does not exist.*MINIDB_REFERENCE_DIR"):
        ref.reference_dir()


def test_empty_directory_gives_an_empty_table() -> None:
    table = load_reference()
    assert table.num_rows == 0
    assert table.schema == ref.REFERENCE_SCHEMA


def test_cells_are_read_with_values_and_provenance(write_csv) -> None:
    write_csv("gamma.csv", *GAMMA)
    write_csv("tandem.csv", "tandem,Figure 3,speedup,cpus_8,throughput,52,tps,ok,p. 3,")
    cells = load_reference().to_pylist()
    assert [(c["file"], c["line"]) for c in cells] == [
        ("gamma.csv", 2), ("gamma.csv", 3), ("gamma.csv", 4), ("gamma.csv", 5), ("tandem.csv", 2)]
    first = cells[0]
    assert first["value"] == 1.25 and first["note"] == "read, with care" and first["source"] == "p. 5"
    assert [c["value"] for c in cells[1:4]] == [None, None, None]
    only_tandem = load_reference("tandem").to_pylist()
    assert [c["value"] for c in only_tandem] == [52.0]


def test_checksum_changes_with_the_files(write_csv) -> None:
    path = write_csv("gamma.csv", GAMMA[0])
    before = reference_checksum()
    assert snapshot_reference().checksum == before
    path.write_text(path.read_text() + GAMMA[1] + "\n")
    assert reference_checksum() != before


BAD_LINES = [
    (GAMMA[0].replace(",ok,", ",okay,"), 3, "status 'okay' is not one of"),
    (GAMMA[0].replace("1.25", "1,25"), 3, "fields, expected 10"),
    (GAMMA[0].replace("1.25", "1.2 s"), 3, "value '1.2 s' is not a number"),
    (GAMMA[0].replace("1.25", "nan"), 3, "not a finite number"),
    (GAMMA[0].replace("1.25", ""), 3, "status 'ok' needs a value"),
    (GAMMA[1].replace(",,s,", ",7,s,"), 3, "status 'unreadable' needs an empty value"),
    (GAMMA[0].replace("gamma,", "gama,", 1), 3, "paper 'gama' is not one of"),
    (GAMMA[0].replace("select_1pct", ""), 3, "'row' is empty"),
]


@pytest.mark.parametrize(("bad", "line", "message"), BAD_LINES)
def test_malformed_line_names_file_and_line(write_csv, bad: str, line: int, message: str) -> None:
    write_csv("gamma.csv", GAMMA[1], bad, GAMMA[2])
    with pytest.raises(ReferenceDataError) as caught:
        load_reference()
    text = str(caught.value)
    assert "gamma.csv" in text and f"line {line}:" in text and message in text


def test_wrong_header_is_refused(write_csv) -> None:
    write_csv("volcano.csv", "volcano,Table 2,x,y,z,1,s,ok,,", header="paper,ref,row,column")
    with pytest.raises(ReferenceDataError, match=r"volcano\.csv, line 1: header must be exactly"):
        load_reference()


def test_line_numbers_count_quoted_newlines(write_csv) -> None:
    write_csv("gamma.csv", 'gamma,Table 1,a,b,m,1,s,ok,p. 5,"two\nlines"', "gamma,Table 1,a,c,m,x,s,ok,,")
    with pytest.raises(ReferenceDataError, match=r"line 4: value 'x'"):
        load_reference()


def test_duplicate_cells_are_refused(write_csv) -> None:
    write_csv("gamma.csv", GAMMA[0])
    write_csv("gamma_more.csv", GAMMA[2], GAMMA[0].replace("1.25", "1.5"))
    with pytest.raises(ReferenceDataError,
                       match=r"gamma_more\.csv, line 3: .* already defined in gamma\.csv, line 2"):
        load_reference()


def test_shipped_reference_csvs_load() -> None:
    """The checkout's own reference CSVs (when present) pass every check."""
    shipped = Path(ref.__file__).resolve().parents[2] / "datasets" / "reference"
    if not shipped.is_dir() or not any(shipped.glob("*.csv")):
        pytest.skip("no reference CSVs in this checkout yet")
    table = load_reference(directory=shipped)
    assert table.num_rows > 0
