"""The one registry (``minidb.plugins``): every kind is listed once, with a base class that
exists, a built-in that is one, and the lab file a student writes one in."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import minidb.plugins as plugins
from minidb.experiments.registry import experiments

ROOT = Path(__file__).resolve().parents[1]


def _base(path: str) -> type:
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("kind", list(plugins.KINDS))
def test_every_kind_has_its_base_class_built_ins_and_lab_file(kind):
    base_path, lab_file = plugins.KINDS[kind]
    base = _base(base_path)
    if kind == "experiment":
        assert experiments() and all(isinstance(e, base) for e in experiments())
    else:
        built_ins = plugins.names(kind)
        assert built_ins, kind
        for name in built_ins:
            found = plugins.lookup(kind, name)
            assert (isinstance(found, type) and issubclass(found, base)) or isinstance(found, base)
    if lab_file is not None:
        assert (ROOT / lab_file).is_file()
    assert kind in plugins.__doc__ and base_path in plugins.__doc__
    if lab_file is not None:
        assert lab_file in plugins.__doc__


def test_every_registered_kind_is_listed():
    plugins.names("commit")  # loads the built-ins
    public = {k for k in plugins._REGISTRY if not k.startswith("_")}
    assert public <= set(plugins.KINDS)
