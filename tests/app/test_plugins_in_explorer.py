"""A student's partitioner or replacement policy loaded from a file into the explorer: the Run
page offers it, runs an experiment with it beside the paper's choices, and refuses bad paths
with a clear message."""

from __future__ import annotations

import textwrap
from pathlib import Path

import explorer
import pytest
from streamlit.testing.v1 import AppTest

from minidb import plugins
from minidb.experiments import get_experiment
from minidb.results import ResultsStore

APP = Path(__file__).resolve().parents[2] / "app"

PLUGIN = '''
import numpy as np

from minidb.parallel.partitioners import Partitioner
from minidb.plugins import register


@register("partitioner", "student_modulo")
class StudentModulo(Partitioner):
    """unique1 modulo the number of nodes (what hash does, without the hash)."""

    name = "student_modulo"

    def route(self, batch):
        return (batch[self.column] % self.num_nodes).astype(np.int64)
'''


POLICY = '''
from minidb.buffer.policy import ReplacementPolicy
from minidb.plugins import register


@register("buffer_policy", "student_fifo")
class StudentFifo(ReplacementPolicy):
    """Evict the frame loaded longest ago (hits do not count)."""

    name = "student_fifo"

    def __init__(self, num_frames):
        super().__init__(num_frames)
        self.loaded = [0] * num_frames
        self.clock = 0

    def page_loaded(self, frame):
        self.clock += 1
        self.loaded[frame] = self.clock

    def page_hit(self, frame):
        pass

    def page_evicted(self, frame):
        self.loaded[frame] = 0

    def choose_victim(self, candidates):
        return int(min(candidates, key=lambda f: self.loaded[f]))
'''


@pytest.fixture
def policy_file(tmp_path: Path):
    path = tmp_path / "student_fifo.py"
    path.write_text(textwrap.dedent(POLICY))
    yield path
    plugins._REGISTRY.get("buffer_policy", {}).pop("student_fifo", None)
    explorer.LOADED_PLUGINS.pop(("buffer_policy", "student_fifo"), None)


@pytest.fixture
def plugin_file(tmp_path: Path):
    path = tmp_path / "student_modulo.py"
    path.write_text(textwrap.dedent(PLUGIN))
    yield path
    plugins._REGISTRY.get("partitioner", {}).pop("student_modulo", None)
    explorer.LOADED_PLUGINS.pop(("partitioner", "student_modulo"), None)


def test_a_plugin_file_registers_its_partitioner(plugin_file):
    assert explorer.load_plugin_file(str(plugin_file)) == [("partitioner", "student_modulo")]
    assert "student_modulo(unique1)" in explorer.partitioner_choices()
    assert explorer.plugin_origin("student_modulo(unique1)") == str(plugin_file.resolve())


@pytest.mark.parametrize(("content", "name", "message"), [
    (None, "missing.py", "no file at"),
    ("x = 1\n", "data.txt", "is not a Python file"),
    ("def broken(:\n", "broken.py", "line 1: syntax error"),
    ("raise RuntimeError('boom')\n", "raises.py", "failed: RuntimeError: boom"),
    ("x = 1\n", "nothing.py", "registers no plug-in"),
])
def test_bad_plugin_paths_are_refused_in_one_line(tmp_path, content, name, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(explorer.PluginFileError, match=message):
        explorer.load_plugin_file(str(path))
    with pytest.raises(explorer.PluginFileError, match="is a folder"):
        explorer.load_plugin_file(str(tmp_path))
    with pytest.raises(explorer.PluginFileError, match="type the path"):
        explorer.load_plugin_file("  ")


def _run_page() -> AppTest:
    at = AppTest.from_file(str(APP / "Home.py"), default_timeout=60).run()
    at.switch_page("pages/2_Run.py").run()
    at.selectbox(key="run_experiment").set_value("gamma.selection_speedup").run()
    assert not at.exception, at.exception
    return at


def test_run_page_refuses_a_bad_path(store_path, tmp_path):
    at = _run_page()
    at.text_input(key="run_plugin_path").set_value(str(tmp_path / "nope.py"))
    at.button(key="run_plugin_load").click().run()
    assert not at.exception, at.exception
    assert any("no file at" in e.value for e in at.error)


def test_run_page_runs_the_students_partitioner_beside_the_builtin(store_path, plugin_file):
    at = _run_page()
    at.text_input(key="run_plugin_path").set_value(str(plugin_file))
    at.button(key="run_plugin_load").click().run()
    assert any("student_modulo" in e.value for e in at.success)
    choice = at.selectbox(key="run_gamma.selection_speedup_partitioner")
    assert "student_modulo(unique1)" in choice.options
    choice.set_value("student_modulo(unique1)")
    at.multiselect(key="run_gamma.selection_speedup_nodes").set_value([1, 2])
    at.number_input(key="run_gamma.selection_speedup_scale").set_value(0.02)
    at.checkbox(key="run_gamma.selection_speedup_also_builtin").check()
    at.button(key="run_submit").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    runs = ResultsStore(store_path).runs(experiment="gamma.selection_speedup")
    partitioners = [explorer.decoded(r["parameters"])["partitioner"] for r in runs[-2:]]
    assert partitioners == ["hash(unique1)", "student_modulo(unique1)"]
    # Compare runs opens on those two: the built-in as A, the student's as B
    at.switch_page("pages/3_Compare_runs.py").run()
    assert not at.exception, at.exception
    params = at.dataframe[0].value
    line = params[params["parameter"] == "partitioner"].iloc[0]
    assert (line["A"], line["B"]) == ("hash(unique1)", "student_modulo(unique1)")


def test_a_plugin_file_registers_its_buffer_policy(policy_file):
    assert explorer.load_plugin_file(policy_file) == [("buffer_policy", "student_fifo")]
    specs = explorer.parameter_specs(get_experiment("gamma.page_size"))
    spec = next(p for p in specs if p.name == "buffer_policy")
    assert "student_fifo" in spec.options and spec.default == "lru"


def test_run_page_runs_the_students_policy_beside_lru(store_path, policy_file):
    at = _run_page()
    at.selectbox(key="run_experiment").set_value("gamma.page_size").run()
    at.text_input(key="run_plugin_path").set_value(str(policy_file))
    at.button(key="run_plugin_load").click().run()
    assert any("student_fifo" in e.value for e in at.success)
    at.selectbox(key="run_gamma.page_size_buffer_policy").set_value("student_fifo")
    at.multiselect(key="run_gamma.page_size_page_sizes").set_value([4096])
    at.number_input(key="run_gamma.page_size_scale").set_value(0.02)
    at.checkbox(key="run_gamma.page_size_also_builtin").check()
    at.button(key="run_submit").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    runs = ResultsStore(store_path).runs(experiment="gamma.page_size")
    assert [explorer.decoded(r["parameters"])["buffer_policy"] for r in runs[-2:]] == [
        "lru", "student_fifo"]


def test_a_loaded_plugin_is_refused_on_ray(plugin_file, store_path):
    explorer.load_plugin_file(plugin_file)
    exp = get_experiment("gamma.selection_speedup")
    with pytest.raises(explorer.PluginFileError, match="inline backend"):
        explorer.run_configuration(exp, ResultsStore(store_path),
                                   {"partitioner": "student_modulo(unique1)", "backend": "ray"})


def test_a_students_commit_protocol_from_a_file_runs_the_fault_matrix():
    lab_file = Path(__file__).resolve().parents[2] / "labs" / "lab5_commit" / "commit.py"
    loaded = explorer.load_plugin_file(lab_file)
    assert ("commit", "student_2pc") in loaded
    exp = get_experiment("ingres.commit_protocols")
    assert explorer.takes_plugin(exp)
    spec = {s.name: s for s in explorer.parameter_specs(exp)}["protocols"]
    assert spec.widget == "select" and {"student_2pc", "all"} <= set(spec.options)
    rows = exp.run({"protocols": "student_2pc", "seeds": 1})
    table = {r["metric"]: r["value"] for r in rows}
    assert table["violations"] == 0 and table["commit_messages"] == 12
