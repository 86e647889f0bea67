"""The ``minidb`` command: datagen, demo, sql and profile, and one-line errors with exit status
2."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from minidb import datagen
from minidb.cli import main
from minidb.demo import run_demo


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_datagen_writes_the_generator_output(runner, tmp_path):
    out = tmp_path / "w.parquet"
    result = runner.invoke(main, ["datagen", "wisconsin", "--rows", "500", "--seed", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = pq.read_table(out)
    assert written.equals(datagen.wisconsin(500, seed=3))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["datagen", "nope", "--rows", "10"], "unknown generator"),
        (["datagen", "wisconsin", "--rows", "0"], "at least 1"),
        (["sql", "SELECT * FROM w HAVING 1", "-t", "w=PARQUET"], "GROUP BY"),
        (["sql", "SELECT x FROM w", "-t", "w=PARQUET"], "no column 'x'"),
        (["sql", "SELECT * FROM v", "-t", "w=PARQUET"], "v"),
        (["sql", "SELECT * FROM w", "-t", "w=PARQUET", "--page-size", "1000"], "page size"),
        (["sql", "SELECT * FROM w", "-t", "w"], "NAME=FILE.parquet"),
        (["sql", "SELECT * FROM w", "-t", "w=/no/such/file.parquet"], "no such file"),
        (["demo", "--policy", "nosuch", "--rows", "100"], "unknown buffer policy"),
        (["profile", "cray"], "unknown hardware profile 'cray'"),
        (["profile", "gamma", "--kind", "guess"], "unknown source kind 'guess'"),
    ],
)
def test_user_errors_exit_2_with_one_line(runner, tmp_path, args, message):
    parquet = tmp_path / "w.parquet"
    datagen.write_parquet(datagen.wisconsin(200), parquet)
    args = [a.replace("PARQUET", str(parquet)) for a in args]
    if args[0] == "datagen":
        args += ["--out", str(tmp_path / "out.parquet")]
    result = runner.invoke(main, args)
    assert result.exit_code == 2, result.output
    error_lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(error_lines) == 1 and error_lines[0].startswith("minidb: error:")
    assert message in error_lines[0]
    assert "Traceback" not in result.output


def test_sql_command_matches_duckdb(runner, tmp_path):
    parquet = tmp_path / "w.parquet"
    table = datagen.wisconsin(2000, seed=1)
    datagen.write_parquet(table, parquet)
    query = "SELECT unique1, unique2 FROM w WHERE unique2 BETWEEN 10 AND 14 ORDER BY unique2"
    result = runner.invoke(main, ["sql", query, "-t", f"w={parquet}", "--index", "w.unique2", "--explain"])
    assert result.exit_code == 0, result.output
    con = duckdb.connect()
    con.register("w", table)
    expected = con.sql(query).fetchall()
    lines = result.output.splitlines()
    printed = [tuple(int(v) for v in line.split()) for line in lines[2 : 2 + len(expected)]]
    assert printed == expected
    assert "non-clustered" in result.output  # --explain shows the index was used


def test_demo_answers_match_duckdb():
    lines: list[str] = []
    summary = run_demo(rows=5000, buffer_pages=64, echo=lines.append)
    assert len(summary) == 10
    assert all(row["matches DuckDB"] == "yes" for row in summary)
    by_query = {row["query"]: row for row in summary}
    # Gamma, Section 5.1: the optimizer uses the non-clustered index for 1% and scans for 10%
    assert "non-clustered" in by_query["1% selection, non-clustered index"]["access path"]
    assert "file scan" in by_query["10% selection, non-clustered index"]["access path"]
    clustered = by_query["1% selection, clustered index"]
    scan = by_query["1% nonindexed selection"]
    assert clustered["seq reads"] + clustered["rand reads"] < (scan["seq reads"] + scan["rand reads"]) / 10


def test_profile_lists_every_profile_and_shows_one_constant_by_constant(runner):
    import json

    from minidb.cost import PROFILES, get_profile

    listed = runner.invoke(main, ["profile"])
    assert listed.exit_code == 0, listed.output
    assert all(name in listed.output for name in PROFILES)
    shown = runner.invoke(main, ["profile", "gamma", "--json"])
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.output)
    gamma = get_profile("gamma")
    assert len(doc["constants"]) == len(gamma.provenance())
    by_name = {r["constant"]: r for r in doc["constants"]}
    assert by_name["instr_scan"]["kind"] == "calibrated"  # Table 7's MIN over 1M tuples
    assert by_name["mips"]["kind"] == "stated" and by_name["mips"]["value"] == 0.6
    assert doc["calibrated_on"] == list(gamma.calibrated_on)
    only = runner.invoke(main, ["profile", "GAMMA", "--kind", "calibrated"])
    assert only.exit_code == 0, only.output
    assert "instr_scan = 549" in only.output and "mips =" not in only.output


@pytest.mark.parametrize("port", ["-1", "0", "99999"])
def test_app_refuses_a_port_out_of_range_before_starting_streamlit(port):
    out = CliRunner().invoke(main, ["app", "--port", port])
    assert out.exit_code == 2
    assert "is not in the range 1<=x<=65535" in out.output and out.exception is not None
    assert not isinstance(out.exception, OverflowError)


def test_datagen_says_when_it_replaces_a_file(tmp_path):
    out = tmp_path / "d.parquet"
    first = CliRunner().invoke(main, ["datagen", "dept", "--rows", "5", "--out", str(out)])
    assert first.exit_code == 0 and "replaced" not in first.output
    again = CliRunner().invoke(main, ["datagen", "dept", "--rows", "7", "--out", str(out)])
    assert again.exit_code == 0 and "it replaced the file that was there" in again.output
    assert pq.read_table(out).num_rows == 7


def test_sql_says_a_table_file_that_is_a_directory_is_one(tmp_path):
    out = CliRunner().invoke(main, ["sql", "SELECT 1", "--table", f"t={tmp_path}"])
    assert out.exit_code == 2
    assert f"{tmp_path} is a directory; give a Parquet file" in out.output
