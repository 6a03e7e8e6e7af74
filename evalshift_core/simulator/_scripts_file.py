"""Simulator scripts from a YAML or JSON file, every problem named by file, line and field."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._exceptions import InputError
from .._limits import load_yaml, node_line, parse_path
from ._rules import ModelScript, load_scripts


def load_script_file(path: str | os.PathLike[str]) -> dict[str, ModelScript]:
    """Scripts from ``{model_name: [rule, ...] | {rules: [...], noise: ...}}`` in YAML or JSON."""
    file = os.fspath(path)
    p = Path(file)
    if not p.is_file():
        raise InputError("scripts file not found", file=file)
    spec, root = load_yaml(p.read_text(encoding="utf-8"), file=file, error=InputError)
    if not isinstance(spec, dict):
        raise InputError("scripts are a mapping of model name to a list of rules", file=file, line=1)
    try:
        return load_scripts(spec)
    except InputError as exc:
        # the field starts with the model's name, which may itself hold dots
        field = exc.field or ""
        model = max((str(k) for k in spec if field == str(k) or field.startswith((f"{k}.", f"{k}["))),
                    key=len, default=None)
        loc: list[Any] = [] if model is None else [model, *parse_path(field[len(model):])]
        line = node_line(root, loc) if loc else None
        raise InputError(exc.message, file=file, line=line, field=exc.field) from exc
