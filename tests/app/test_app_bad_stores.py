"""The explorer on stores an instructor may really have: a damaged or busy file, a directory
named as the store, runs that stored NaN or infinite values. Each page says what is wrong in one
line, never a traceback, and never shows a stored value as a missing row."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

RUN = "pages/2_Run.py"


def _open(page: str | None) -> AppTest:
    """Like ``open_app``, but hands back the page even when it raised, for the assertion."""
    from app_test import APP

    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=30).run()
    if page is not None:
        at.switch_page(page).run()
    return at


@pytest.mark.parametrize("content", [b"not a database\n", b"DUCK" * 5000],
                         ids=["text", "garbage"])
def test_run_page_says_a_bad_store_in_one_line(tmp_path, monkeypatch, content):
    broken = tmp_path / "results.duckdb"
    broken.write_bytes(content)
    monkeypatch.setenv("MINIDB_RESULTS", str(broken))
    at = _open(RUN)
    assert not at.exception, at.exception
    assert "results store" in at.error[0].value
    assert at.dataframe  # the parameters table is still there to read


def test_a_directory_named_as_the_store_is_said_to_be_one(tmp_path, monkeypatch):
    folder = tmp_path / "results.duckdb"
    folder.mkdir()
    monkeypatch.setenv("MINIDB_RESULTS", str(folder))
    for page in (None, "pages/4_Findings.py", RUN):
        at = _open(page)
        assert not at.exception, at.exception
        assert "is a directory" in at.error[0].value, page
        assert not any("No results store" in i.value for i in at.info)
