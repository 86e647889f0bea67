"""Streamlit pieces every page of the explorer shares: the page frame, the store picker in the
sidebar, progress bars and one-line errors. The logic lives in ``explorer``; this module only
draws."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import explorer
import streamlit as st

from minidb.errors import MinidbError
from minidb.results import ResultsStore

STORE_PATH = "minidb_store_path"
"""Session key of the store path; kept apart from the widget's key so it survives page
switches (Streamlit forgets a widget's state on a page that does not draw it)."""
_STORE_INPUT = "minidb_store_path_input"


def page(title: str, intro: str = "") -> None:
    """The frame of a page: browser tab title, wide layout, heading, one line of intro."""
    st.set_page_config(page_title=f"{title} · minidb explorer", layout="wide")
    st.title(title)
    if intro:
        st.caption(intro)


def _remember_path() -> None:
    st.session_state[STORE_PATH] = st.session_state[_STORE_INPUT].strip()


def store_path() -> str:
    """The results store path chosen in the sidebar (first ``$MINIDB_RESULTS`` or the user's
    cache file)."""
    if not st.session_state.get(STORE_PATH):
        st.session_state[STORE_PATH] = explorer.initial_store_path()
    st.session_state[_STORE_INPUT] = st.session_state[STORE_PATH]
    st.sidebar.text_input("Results store (DuckDB file)", key=_STORE_INPUT,
                          on_change=_remember_path,
                          help="Where runs are read from and stored; $MINIDB_RESULTS sets the "
                               "first value.")
    return st.session_state[STORE_PATH]


def open_store(path: str, create: bool = False, stop: bool = True) -> ResultsStore | None:
    """The store at ``path`` (from ``store_path``). Without a file there (and ``create`` False)
    the page says how to make one and, with ``stop``, ends there. A store opened only to read
    comes back ``guarded``."""
    try:
        opened = explorer.open_store(path, create=create)
    except MinidbError as err:
        st.error(str(err))
        st.stop()
    if opened is None:
        st.info(explorer.store_hint(path))
        if stop:
            st.stop()
    return opened if create else guarded(opened)


class _GuardedStore:
    """A store whose every call that fails with minidb's error (another program took the store
    after the page opened it, the file was replaced by a damaged one) shows that error as one red
    line and ends the page's run there, as a store that is busy when the page opens it does."""

    def __init__(self, store: ResultsStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except MinidbError as err:
                st.error(str(err))
                st.stop()

        return call


def guarded(store: ResultsStore | None) -> ResultsStore | None:
    """``store`` for a page that reads it (see ``_GuardedStore``); None stays None. Pages that
    write keep the bare store, so that a failed write is told as the run's failure."""
    return None if store is None else _GuardedStore(store)  # type: ignore[return-value]


def progress_bar(prefix: str = "") -> explorer.BarProgress:
    """A progress bar on the page, driven by the experiment that is handed the result."""
    bar = st.progress(0.0, text=prefix or "starting")
    return explorer.BarProgress(lambda fraction, text: bar.progress(fraction, text=text), prefix)


@contextmanager
def user_errors() -> Iterator[None]:
    """Show minidb's errors (unknown parameter, busy store...) as one red line, not a trace."""
    try:
        yield
    except MinidbError as err:
        st.error(str(err))
