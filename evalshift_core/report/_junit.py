"""JUnit XML for CI gates: one testcase per comparison and per regression, plus the verdict.

CI systems (GitHub, GitLab, Jenkins) render these files natively, so a gate shows what broke. The
file agrees with the exit code: it holds failures only when the verdict fails the gate (a FAIL, or
an INCONCLUSIVE under ``--fail-on-inconclusive``); otherwise what would have failed is skipped.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from .._io import atomic_write_bytes
from ..analysis._headline import duplicate_comparisons


def _label(c: Mapping[str, Any]) -> str:
    side = f" ({c['side']})" if c.get("side") else ""
    return f"{c.get('evaluator')}.{c.get('name')}{side}"


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def comparison_failed(c: Mapping[str, Any], alpha: float) -> bool:
    """A comparison fails when the target is significantly worse after Benjamini-Hochberg."""
    diff, p_adj = c.get("difference"), c.get("p_adjusted")
    return diff is not None and diff < 0 and p_adj is not None and p_adj < alpha


def build_junit(payload: Mapping[str, Any], *, alpha: float = 0.05, fail_on_inconclusive: bool = False) -> ET.Element:
    """The ``<testsuites>`` tree for a verdict payload (``run_id``, ``verdict``, ``comparisons``, ...).

    Only a FAIL verdict turns comparisons and regressions into failures; under any other verdict
    they are skipped with the verdict named, so the file never fails a job the exit code passed.
    An inconclusive verdict is skipped, or a failure under ``fail_on_inconclusive`` (exit 3).
    """
    run_id = str(payload.get("run_id"))
    suites = ET.Element("testsuites", name="evalshift")

    def suite(name: str) -> ET.Element:
        return ET.SubElement(suites, "testsuite", name=name)

    verdict_suite = suite(f"evalshift.verdict[{run_id}]")
    case = ET.SubElement(verdict_suite, "testcase", classname="evalshift.verdict", name="verdict")
    verdict = payload.get("verdict")
    failing = verdict == "fail"
    said = str(payload.get("headline") or f"verdict: {verdict}")  # the plain words first, then the statistics
    reasons = "\n".join(str(r) for r in payload.get("reasons") or [])
    if failing or (verdict == "inconclusive" and fail_on_inconclusive):
        ET.SubElement(case, "failure", message=said, type="verdict").text = reasons
    elif verdict != "pass":
        ET.SubElement(case, "skipped", message=said).text = reasons
    else:
        ET.SubElement(case, "system-out").text = said
    # One root cause, one failure: a side that regressed on the same examples and tools as another
    # side of its evaluator is counted once, under the side it repeats.
    duplicates = duplicate_comparisons(payload.get("regressions") or [])

    def fail_or_skip(case: ET.Element, message: str, kind: str) -> None:
        if failing:
            ET.SubElement(case, "failure", message=message, type=kind)
        else:
            ET.SubElement(case, "skipped", message=f"{message} (not decisive: the verdict is {verdict})")

    comp_suite = suite(f"evalshift.comparisons[{run_id}]")
    for c in payload.get("comparisons") or []:
        case = ET.SubElement(comp_suite, "testcase", classname="evalshift.comparisons", name=_label(c))
        summary = (f"target {_fmt(c.get('target_mean'))} vs source {_fmt(c.get('source_mean'))}, difference "
                   f"{_fmt(c.get('difference'))}, adjusted p {_fmt(c.get('p_adjusted'))}, test {c.get('test')}, "
                   f"severity {c.get('severity')}, n={c.get('n')}")
        if c.get("status") == "unknown":
            ET.SubElement(case, "skipped", message="Nothing measured")
        elif comparison_failed(c, alpha) and _label(c) in duplicates:
            ET.SubElement(case, "skipped", message=f"{summary} (the same root cause as {duplicates[_label(c)]}: "
                                                   "counted there)")
        elif comparison_failed(c, alpha):
            fail_or_skip(case, summary, str(c.get("severity") or "regression"))
        else:
            ET.SubElement(case, "system-out").text = summary

    reg_suite = suite(f"evalshift.regressions[{run_id}]")
    regressions = payload.get("regressions") or []
    agreeing: dict[tuple[str, str], list[str]] = {}
    for r in regressions:
        if _label(r) in duplicates:
            agreeing.setdefault((str(r.get("example_id")), duplicates[_label(r)]), []).append(str(r.get("side")))
    for r in regressions:
        if _label(r) in duplicates:
            continue  # said by the side it repeats
        labels = ", ".join(r.get("labels") or []) or "score drop"
        case = ET.SubElement(reg_suite, "testcase", classname=f"evalshift.regressions.{_label(r)}",
                             name=str(r.get("example_id")))
        message = (f"{labels}: target {_fmt(r.get('target_score'))} < source {_fmt(r.get('source_score'))}"
                   f" [{', '.join(r.get('tools') or [])}]")
        sides = agreeing.get((str(r.get("example_id")), _label(r)))
        if sides:
            message += f"; the {' and '.join(sides)} side agrees"
        fail_or_skip(case, message, (r.get("labels") or ["REGRESSION"])[0])

    for s in suites.findall("testsuite"):
        cases = s.findall("testcase")
        s.set("tests", str(len(cases)))
        s.set("failures", str(sum(1 for t in cases if t.find("failure") is not None)))
        s.set("skipped", str(sum(1 for t in cases if t.find("skipped") is not None)))
        s.set("errors", "0")
    suites.set("tests", str(sum(int(s.get("tests", "0")) for s in suites)))
    suites.set("failures", str(sum(int(s.get("failures", "0")) for s in suites)))
    suites.set("skipped", str(sum(int(s.get("skipped", "0")) for s in suites)))
    return suites


def write_junit(path: str | os.PathLike[str], payload: Mapping[str, Any], *, alpha: float = 0.05,
                fail_on_inconclusive: bool = False) -> None:
    """Write the JUnit XML file for a verdict payload, atomically."""
    tree = build_junit(payload, alpha=alpha, fail_on_inconclusive=fail_on_inconclusive)
    ET.indent(tree)
    atomic_write_bytes(path, ET.tostring(tree, encoding="utf-8", xml_declaration=True) + b"\n")
