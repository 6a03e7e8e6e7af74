"""The one exception tree of evalshift_core.

    EvalShiftError                 every error a user can cause; the CLI prints it on one line
    ├── ConfigError                evalshift.yaml or a tools file is invalid (file, line, field)
    ├── InputError                 a suite, capture or traces file is invalid (file, line, field)
    │   ├── UnknownToolsetError    an example's toolset_ref resolves to no sidecar
    │   └── UnsafeNameError        an id that would become a path is not a safe file name
    ├── ReplayError                a run cannot start (model routing, missing SDK, cost cap)
    └── RunNotFoundError           no run with that id
"""

from __future__ import annotations


class EvalShiftError(Exception):
    """Base of every error a user can cause."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = str(self.file)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"


class ConfigError(EvalShiftError):
    """evalshift.yaml or a tools file is invalid."""


class InputError(EvalShiftError):
    """A suite, capture or traces file is invalid."""


class UnknownToolsetError(InputError):
    """An example's toolset_ref resolves to no sidecar."""


class ReplayError(EvalShiftError):
    """A run cannot start or cannot reach a model."""


class RunNotFoundError(EvalShiftError):
    """No run with that id."""


class UnsafeNameError(InputError):
    """An id that would become a path component (suite name, prompt id, run id, toolset ref)
    is not a safe file name, or its path resolves outside its folder."""
