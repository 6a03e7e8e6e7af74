"""What stops one example's replay before any request is sent, checked line by line.

``run`` plans every request before the first call, and one example whose inputs do not fill the
prompt template, or whose toolset sidecar is missing, would stop the whole run; checked here per
suite line, that example is reported with its file:line and the rest replays.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .._exceptions import EvalShiftError, InputError
from .._models import Example
from ..store._suites import iter_suite, resolve_tools
from ._messages import DEFAULT_TEMPLATE, render_prompt


def replay_problem(
    example: Example,
    base: str | os.PathLike[str],
    template: str = DEFAULT_TEMPLATE,
    toolsets: dict[str, Any] | None = None,
) -> InputError | None:
    """Why ``example`` cannot be replayed from ``base`` with ``template`` (an InputError naming
    the field), or None. ``toolsets`` caches what each toolset_ref resolved to across calls."""
    try:
        render_prompt(example, template)
    except EvalShiftError as exc:
        return InputError(exc.message, field=exc.field or "inputs")
    ref = example.toolset_ref
    if ref is not None and example.tools is None:
        cache = toolsets if toolsets is not None else {}
        if ref not in cache:
            try:
                resolve_tools(example, base)
                cache[ref] = None
            except InputError as exc:
                cache[ref] = exc
        found = cache[ref]
        if found is not None:
            where = f"{found.file}: " if found.file else ""
            return InputError(f"{where}{found.message}", field=found.field or "toolset_ref")
    return None


def replayable_examples(
    path: str | os.PathLike[str],
    *,
    base: str | os.PathLike[str],
    config: Any = None,
    on_bad_line: Callable[[InputError], None],
) -> list[Example]:
    """The examples of a suite file that can be replayed; every other line is handed to
    ``on_bad_line`` (an InputError naming file, line and field) and left out.

    The template is the one ``run`` uses: the prompt of the first valid example (``config`` is
    an evalshift.yaml ``Config``; without one, ``{input}``). A file whose every line is bad
    raises InputError naming the first.
    """
    bad: list[InputError] = []

    def report(error: InputError) -> None:
        bad.append(error)
        on_bad_line(error)

    examples: list[Example] = []
    template: str | None = None
    toolsets: dict[str, Any] = {}
    for lineno, example in iter_suite(path, on_bad_line=report):
        if template is None:
            template = config.template_for(example.prompt_id) if config is not None else DEFAULT_TEMPLATE
        problem = replay_problem(example, base, template, toolsets)
        if problem is not None:
            report(InputError(problem.message, file=str(path), line=lineno, field=problem.field))
            continue
        examples.append(example)
    if bad and not examples:
        raise InputError(f"no valid example: all {len(bad)} line(s) are bad; first: {bad[0]}")
    return examples
