"""What the AppTest-driven page tests share: start the explorer at Home and go to a page, as a
user clicking in the sidebar would, failing on any exception a page raised."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "app"


def open_app(page: str | None = None, timeout: float = 30) -> AppTest:
    """Start the app at Home, then go to ``page`` (a path under app/, e.g. ``pages/2_Run.py``)."""
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=timeout).run()
    assert not at.exception, at.exception
    if page is not None:
        at.switch_page(page).run()
        assert not at.exception, at.exception
    return at
