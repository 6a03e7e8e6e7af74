"""Adding an evaluator from outside the package: the ``evaluator`` decorator and entry points."""

from __future__ import annotations

import textwrap

import pytest
from evaluator_builders import example, trace

import evalshift_core
from evalshift_core import Config, ConfigError, TextEvaluator, ToolEvaluator
from evalshift_core.evaluators import (
    ENTRY_POINT_GROUP,
    REGISTRY,
    Pair,
    ScoreRecord,
    build_evaluators,
    evaluate_pair,
    evaluator_class,
    evaluator_kind,
)


@pytest.fixture(autouse=True)
def registry_restored():
    """Each test registers its own evaluators; the registry is left as the package builds it."""
    before = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(before)


class AnswerLength(TextEvaluator):
    """The target's answer at least as long as the source's (a toy text evaluator)."""

    options = frozenset({"slack"})

    def __init__(self, config):
        super().__init__(config)
        self.slack = int(config.get("slack", 0))
        self.calls = 0

    def score_pair(self, pair: Pair) -> list[ScoreRecord]:
        self.calls += 1
        src, tgt = pair.source.final_text or "", pair.target.final_text or ""
        ok = len(tgt) + self.slack >= len(src)
        return [self.record(pair.example, source_score=1.0, target_score=1.0 if ok else 0.0,
                            labels=[] if ok else ["TEXT_DRIFT"], metadata={"lengths": [len(src), len(tgt)]})]


def test_the_decorator_registers_a_class_under_the_name_it_gives():
    cls = evalshift_core.evaluator("answer_length")(AnswerLength)
    assert cls is AnswerLength and REGISTRY["answer_length"] is AnswerLength
    assert AnswerLength.type_name == "answer_length" and evaluator_kind("answer_length") == "text"
    [rec] = evaluate_pair(example(), trace(text="a long answer"), trace(text="short"), {"answer_length": [{}]})
    assert rec["evaluator"] == rec["name"] == "answer_length"
    assert (rec["source_score"], rec["target_score"], rec["labels"]) == (1.0, 0.0, ["TEXT_DRIFT"])
    assert rec["metadata"] == {"lengths": [13, 5]}
    assert Config.model_validate({"evaluators": {"answer_length": [{"slack": 8}]}}).evaluators


def test_a_text_evaluator_never_sees_a_pair_without_text():
    evalshift_core.evaluator("answer_length")(AnswerLength)
    [ev] = build_evaluators({"answer_length": [{}]})
    [rec] = ev.score(example(), trace("lookup_order"), trace("lookup_order"))
    assert ev.calls == 0
    assert rec.skipped and (rec.source_score, rec.target_score) == (1.0, 1.0)
    assert rec.metadata == {"skipped": True, "reason": "both sides answered with tool calls and no text"}


def test_a_bare_decorator_uses_the_classs_type_name():
    @evalshift_core.evaluator
    class CallCount(ToolEvaluator):
        type_name = "call_count"

        def score_pair(self, pair: Pair) -> list[ScoreRecord]:
            same = len(pair.source_calls) == len(pair.target_calls)
            return [self.record(pair.example, source_score=1.0, target_score=float(same))]

    assert REGISTRY["call_count"] is CallCount and evaluator_kind("call_count") == "tool"
    [rec] = evaluate_pair(example(), trace("a", "b"), trace("a"), {"call_count": [{}]})
    assert (rec["evaluator"], rec["target_score"]) == ("call_count", 0.0)


def test_a_name_taken_by_another_class_or_a_class_of_no_kind_is_refused():
    class Impostor(ToolEvaluator):
        def score_pair(self, pair):
            return []

    with pytest.raises(ValueError, match="'tool_selection' is already registered"):
        evalshift_core.evaluator("tool_selection")(Impostor)
    with pytest.raises(ValueError, match="type name must be an identifier"):
        evalshift_core.evaluator("two words")(Impostor)

    class NoKind(evalshift_core.evaluators.Evaluator):
        pass

    with pytest.raises(TypeError, match="ToolEvaluator or TextEvaluator"):
        evalshift_core.evaluator("no_kind")(NoKind)
    with pytest.raises(TypeError, match="ToolEvaluator or TextEvaluator"):
        evalshift_core.evaluator("not_a_class")(len)
    assert "no_kind" not in REGISTRY and "not_a_class" not in REGISTRY


def test_an_unknown_type_names_the_nearest_known_one():
    with pytest.raises(ConfigError, match=r"unknown evaluator type 'tool_selecton'; did you mean 'tool_selection'\?"):
        build_evaluators({"tool_selecton": [{}]})
    assert evaluator_kind("tool_selecton") is None


def _install_plugin(root, module_source: str, entry: str) -> None:
    """A package installed on ``root`` as pip would lay it out: a module and its dist-info."""
    (root / "evalshift_plugin_demo.py").write_text(textwrap.dedent(module_source))
    info = root / "evalshift_plugin_demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalshift-plugin-demo\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry}\n")


PLUGIN = """
    from evalshift_core import ToolEvaluator

    class FirstTool(ToolEvaluator):
        def score_pair(self, pair):
            same = pair.source_names[:1] == pair.target_names[:1]
            return [self.record(pair.example, source_score=1.0, target_score=float(same))]
"""


def test_an_entry_point_is_loaded_when_its_name_is_first_looked_up(tmp_path, monkeypatch):
    _install_plugin(tmp_path, PLUGIN, "first_tool = evalshift_plugin_demo:FirstTool")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "evalshift_plugin_demo", raising=False)
    assert "first_tool" not in REGISTRY
    cls = evaluator_class("first_tool")
    assert REGISTRY["first_tool"] is cls and cls.type_name == "first_tool" and cls.kind == "tool"
    [rec] = evaluate_pair(example(), trace("a", "b"), trace("b", "a"), {"first_tool": [{}]})
    assert (rec["evaluator"], rec["target_score"]) == ("first_tool", 0.0)
    # An installed plugin is one of the known types an unknown name is told about.
    with pytest.raises(ConfigError, match=r"did you mean 'first_tool'\?"):
        build_evaluators({"first_tol": [{}]})


def test_an_entry_point_that_cannot_load_is_one_clear_config_error(tmp_path, monkeypatch):
    _install_plugin(tmp_path, PLUGIN, "broken = evalshift_plugin_demo:NoSuchClass")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "evalshift_plugin_demo", raising=False)
    with pytest.raises(ConfigError) as info:
        build_evaluators({"broken": [{}]})
    assert str(info.value).startswith("evaluators.broken: evaluator type 'broken' (entry point "
                                      "'evalshift_plugin_demo:NoSuchClass' in group evalshift.evaluators) could "
                                      "not be loaded: AttributeError")
    assert "broken" not in REGISTRY
