"""The one rule for ids that become paths: suite names, prompt ids, run ids, toolset refs."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalshift_core import Example, InputError, run
from evalshift_core.store._paths import (
    UnsafeNameError,
    check_toolset_ref,
    is_safe_name,
    name_problem,
    toolset_ref_problem,
    under,
)
from evalshift_core.store._runs import run_dir_for
from evalshift_core.store._suites import suite_path, toolset_path

GOOD_REF = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize("name", ["support", "support-v2", "20260101-120000-ab12cd", "a.b", "a b", "x_1+y@z=w",
                                  "客服", "Ünïcode", "-dash-first", "a" * 128])
def test_safe_names(name):
    assert name_problem(name) is None


@pytest.mark.parametrize(("name", "why"), [
    ("", "must not be empty"),
    ("..", "starts with '.'"),
    (".", "starts with '.'"),
    (".hidden", "starts with '.'"),
    ("../../X", "path separator"),
    ("/abs/path/X", "path separator"),
    ("a\\b", "path separator"),
    ("C:evil", "may hold only"),
    ("a\x00b", "NUL"),
    ("tab\there", "may hold only"),
    ("line\nbreak", "may hold only"),
    ("trailing.", "may hold only"),
    ("trailing ", "may hold only"),
    (" leading", "may hold only"),
    ("a" * 129, "longer than 128"),
    ("é" * 101, "longer than 128"),  # 202 UTF-8 bytes
    ("CON", "reserved device name"),
    ("nul.txt", "reserved device name"),
    ("lpt1", "reserved device name"),
    (42, "must be a string"),
])
def test_unsafe_names_say_why(name, why):
    assert why in (name_problem(name) or "")


@given(st.text(max_size=40))
def test_a_safe_name_is_one_path_component_inside_its_folder(name):
    if not is_safe_name(name):
        return
    assert os.path.basename(name) == name and os.path.normpath(name) == name
    assert not os.path.isabs(name) and ".." not in name.split(os.sep)


@pytest.mark.parametrize("ref", ["sha256:../../outside", "sha256:ab", "sha256:" + "A" * 64, "sha1:" + "0" * 64,
                                 "sha256:" + "0" * 63 + "/", "sha256:" + "0" * 65, None, 5])
def test_toolset_refs_are_sha256_and_64_hex(ref):
    assert toolset_ref_problem(ref) is not None
    with pytest.raises(UnsafeNameError, match="toolset_ref"):
        check_toolset_ref(ref)
    assert toolset_ref_problem(GOOD_REF) is None


def test_every_id_that_becomes_a_path_goes_through_the_rule(tmp_path):
    assert suite_path(tmp_path, "support") == tmp_path / "suites" / "support.jsonl"
    assert run_dir_for(tmp_path, "r1") == tmp_path / "runs" / "r1"
    assert toolset_path(tmp_path, GOOD_REF) == tmp_path / "toolsets" / (GOOD_REF[7:] + ".json")
    with pytest.raises(InputError, match="suite name '../../X' contains a path separator"):
        suite_path(tmp_path, "../../X")
    with pytest.raises(InputError, match="run id '../../X' contains a path separator"):
        run_dir_for(tmp_path, "../../X")
    with pytest.raises(InputError, match="toolset_ref 'sha256:../../outside'"):
        toolset_path(tmp_path, "sha256:../../outside")


def test_a_symlink_planted_under_a_safe_name_is_refused(tmp_path):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "s.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(UnsafeNameError, match="outside"):
        under(tmp_path / "suites", "s.jsonl")


def test_a_suite_whose_toolset_ref_walks_out_of_the_base_is_refused_at_validation():
    """Issue: ``toolset_ref: "sha256:../../outside"`` read outside.json from outside .evalshift."""
    with pytest.raises(ValueError, match="toolset_ref must be 'sha256:' followed by 64 lowercase hex"):
        Example(id="x", toolset_ref="sha256:../../outside")


def test_run_with_a_run_id_walking_out_of_the_base_writes_nothing(tmp_path):
    """Issue: ``--run-id ../../X`` wrote a run folder outside the base."""
    base = tmp_path / "a" / "b" / ".evalshift"
    with pytest.raises(InputError, match="run id"):
        run([Example(id="e", inputs={"input": "hi"})], source="openai:m", target="openai:n", base=base,
            run_id="../../X", progress=False)
    assert not (tmp_path / "a" / "X").exists() and not base.exists()
