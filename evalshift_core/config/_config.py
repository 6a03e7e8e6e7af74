"""evalshift.yaml: the prompts, default models, evaluators, providers and migration policy.

Validated by pydantic; every error names the file, the line and the field, and a typo'd key
comes with the nearest valid one ("did you mean 'content'?").
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from .._exceptions import ConfigError, EvalShiftError
from .._limits import load_yaml, node_line, parse_path
from ..analysis._policy import MigrationPolicy

CONFIG_FILE = "evalshift.yaml"
CONFIG_VERSION = 1
PROVIDER_NAMES = ("openai", "anthropic", "gemini")


class Prompt(BaseModel):
    """One prompt the suite replays (capture-first: ``content: "{input}"``)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Prompt id; captures name it with ``turn(prompt_id=...)``."""
    detection: Literal["manual"] = "manual"
    """How prompts are found: ``manual`` means listed here."""
    content: str = "{input}"
    """Template of the user message; ``{input}`` renders the recorded one."""
    variables: list[str] = Field(default_factory=lambda: ["input"])
    """Template variables ``content`` may use."""
    tools_path: str | None = None
    """Tool definitions file (YAML or JSON); setting it makes the prompt agent-style."""

    @model_validator(mode="after")
    def _content_uses_declared_variables(self) -> Prompt:
        try:
            used = [f for _, f, _, _ in string.Formatter().parse(self.content) if f]
        except ValueError as exc:
            raise ValueError(f"content is not a valid template: {exc}") from exc
        for name in used:
            root = re.split(r"[.\[]", name, maxsplit=1)[0]
            if root not in self.variables:
                raise ValueError(f"content uses {{{root}}} but variables lists {self.variables}")
            if "." in name or "__" in name:
                # Attribute access in a format string walks Python objects ({input.__class__...}).
                raise ValueError(f"content uses {{{name}}}: only {{name}} and {{name[key]}} are allowed")
        return self


class Defaults(BaseModel):
    """The models ``compare`` uses when ``--from`` / ``--to`` are not given."""

    model_config = ConfigDict(extra="forbid")

    source_model: str | None = None
    """The model in production today."""
    target_model: str | None = None
    """The candidate."""

    @field_validator("source_model", "target_model")
    @classmethod
    def _routable(cls, value: str | None) -> str | None:
        if value is not None:
            from ..replay._routing import route

            try:
                route(value)
            except EvalShiftError as exc:
                raise ValueError(exc.message) from exc
        return value


class Replay(BaseModel):
    """How ``run`` and ``compare`` replay the suite."""

    model_config = ConfigDict(extra="forbid")

    source_repeats: int = Field(default=1, ge=1, le=20)
    """Replays of the source model per example. Two or more give every drift comparison an A/A
    baseline (the source's own run-to-run variability) where the suite's recordings cannot, at the
    cost of the extra source calls."""
    batch: bool = False
    """Replay through the providers' batch APIs (OpenAI Batch, Anthropic Message Batches, Gemini
    batch mode): about half the price, results within the providers' 24-hour window.
    ``evalshift run/compare --batch`` turns it on for one run."""
    batch_poll_s: float = Field(default=5.0, gt=0, le=3600)
    """Seconds before a submitted batch is first polled; each later poll waits 1.5x longer, up to
    a minute."""

    def batch_policy(self) -> Any:
        """How ``run`` polls its batches."""
        from ..replay._batch import BatchPolicy

        return BatchPolicy(poll_s=self.batch_poll_s)


def _default_evaluators() -> dict[str, Any]:
    from ..evaluators import DEFAULT_EVALUATORS

    return copy.deepcopy(DEFAULT_EVALUATORS)


class Config(BaseModel):
    """The whole of evalshift.yaml."""

    model_config = ConfigDict(extra="forbid")

    version: int = CONFIG_VERSION
    """Config format version; this EvalShift reads version 1."""
    prompts: list[Prompt] = Field(default_factory=lambda: [Prompt(id="replay")])
    """The prompts; the capture-first config has one, ``replay``."""
    defaults: Defaults = Field(default_factory=Defaults)
    """Default source and target models."""
    evaluators: dict[str, Any] = Field(default_factory=_default_evaluators)
    """Evaluator type name -> list of configured instances (each with a ``name``)."""
    migration_policy: MigrationPolicy = Field(default_factory=MigrationPolicy)
    """The budget the target must stay within to pass."""
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Client settings by provider (``openai``) or by model (``openai:my-model``), e.g.
    ``openai: {base_url: ..., api_key_env: ...}``; a model's entry goes over its provider's."""
    replay: Replay = Field(default_factory=Replay)
    """How the suite is replayed (``source_repeats``, ``batch``)."""
    _tools_dir: Path | None = PrivateAttr(default=None)

    @property
    def tools_dir(self) -> Path | None:
        """The folder prompts' ``tools_path`` are relative to: the config file's folder when it
        was read from a file, else None (the current directory)."""
        return self._tools_dir

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value > CONFIG_VERSION:
            raise ValueError(f"version {value} is newer than this EvalShift reads ({CONFIG_VERSION}); upgrade evalshift")
        if value < 1:
            raise ValueError("version must be 1")
        return value

    @field_validator("providers", mode="before")
    @classmethod
    def _known_providers(cls, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            return value  # pydantic says it must be a mapping
        for name, entry in value.items():
            problem = provider_entry_problem(name, entry)
            if problem is not None:
                where, message = problem
                raise ValueError(f"{name}.{'.'.join(where)}: {message}" if where else message)
        return {name: dict(entry or {}) for name, entry in value.items()}

    @field_validator("evaluators", mode="before")
    @classmethod
    def _known_evaluator_types(cls, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValueError("evaluators must be a mapping of evaluator type to a list of instances")
        from ..evaluators import evaluator_class

        for type_name, instances in value.items():
            evaluator_class(type_name)  # ValueError: unknown, with the nearest known type
            if instances is not None and not isinstance(instances, (Mapping, list)):
                raise ValueError(f"evaluators.{type_name} must be a list of instances, each a mapping")
        return value

    @model_validator(mode="after")
    def _unique_prompt_ids(self) -> Config:
        seen: set[str] = set()
        for p in self.prompts:
            if p.id in seen:
                raise ValueError(f"prompt id {p.id!r} appears twice")
            seen.add(p.id)
        return self

    def prompt(self, prompt_id: str | None) -> Prompt | None:
        """The prompt with that id; the only prompt when there is one (capture-first)."""
        for p in self.prompts:
            if p.id == prompt_id:
                return p
        return self.prompts[0] if len(self.prompts) == 1 else None

    def template_for(self, prompt_id: str | None) -> str:
        """The user-message template replayed for examples of ``prompt_id``."""
        p = self.prompt(prompt_id)
        return p.content if p is not None else "{input}"


# -- providers: entries --------------------------------------------------------------------------

_PROVIDER_OPTIONS: dict[str, str] = {
    "base_url": "a string",
    "api_key": "a string",
    "api_key_env": "a string",
    "headers": "a mapping of names to strings",
    "rpm": "a number above 0",
    "concurrency": "a whole number of at least 1",
    "max_concurrency": "a whole number of at least 1",
    "timeout": "a number above 0",
    "api": "'chat' or 'responses'",
}


def _provider_option_ok(key: str, value: Any) -> bool:
    if key in ("base_url", "api_key", "api_key_env"):
        return isinstance(value, str) and bool(value)
    if key == "headers":
        return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    if key in ("rpm", "timeout"):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    if key in ("concurrency", "max_concurrency"):
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if key == "api":
        return value in ("chat", "responses")
    return True


def provider_entry_problem(name: Any, entry: Any) -> tuple[list[str], str] | None:
    """What is wrong with one ``providers:`` entry, as (keys below ``providers.NAME``, message).

    ``name`` is a provider (``openai``) or one model of it (``openai:my-model``); the entry holds
    the settings in ``_PROVIDER_OPTIONS``. None when the entry is valid.
    """
    provider, sep, model = str(name).partition(":")
    if provider not in PROVIDER_NAMES:
        return [], f"unknown provider {provider!r}{_did_you_mean(provider, PROVIDER_NAMES)}" + (
            "; write a model as provider:NAME (openai:NAME, anthropic:NAME or gemini:NAME)" if sep else "")
    if sep and not model:
        return [], f"{name!r} names a provider but no model; write {provider}:NAME"
    if entry is None:
        return None
    if not isinstance(entry, Mapping):
        return [], f"must be a mapping of settings ({', '.join(_PROVIDER_OPTIONS)})"
    for key, value in entry.items():
        if key not in _PROVIDER_OPTIONS:
            return [str(key)], (f"unknown provider setting {key!r}{_did_you_mean(str(key), list(_PROVIDER_OPTIONS))}"
                                f" (known: {', '.join(_PROVIDER_OPTIONS)})")
        if key == "api" and provider != "openai":
            return [str(key)], "only openai entries take 'api' (chat or responses)"
        if not _provider_option_ok(str(key), value):
            return [str(key)], f"must be {_PROVIDER_OPTIONS[str(key)]}, not {_type_name(value)}"
    return None


def _check_providers(providers: Any, *, file: str, root: Any) -> None:
    """Each ``providers:`` entry's key and settings, an error pointed at the line of the culprit."""
    if not isinstance(providers, Mapping):
        return  # the model's own validation says what the whole block must be
    for name, entry in providers.items():
        problem = provider_entry_problem(name, entry)
        if problem is not None:
            where, message = problem
            loc = ["providers", name, *where]
            raise ConfigError(message, file=file, line=_line_of(root, loc), field=_format_loc(loc))


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


# -- locating an error in the file --------------------------------------------------------------


def _format_loc(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _line_of(root: Any, loc: Sequence[Any]) -> int | None:
    """1-based line of the node at ``loc`` in a composed YAML tree (the deepest one found)."""
    return node_line(root, loc)


def _model_at(loc: Sequence[Any]) -> type[BaseModel] | None:
    """The pydantic model that owns the last element of ``loc`` (for key suggestions)."""
    model: Any = Config
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        annotation = model.model_fields[part].annotation
        while get_origin(annotation) is not None and get_origin(annotation) is not Literal:
            args = [a for a in get_args(annotation) if a is not type(None)]
            annotation = args[-1] if args else None
        model = annotation
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _message_for(err: Mapping[str, Any]) -> str:
    loc = list(err.get("loc", ()))
    kind = err.get("type")
    if kind == "extra_forbidden" and loc:
        owner = _model_at(loc[:-1])
        known = list(owner.model_fields) if owner else []
        return f"unknown key {loc[-1]!r}{_did_you_mean(str(loc[-1]), known)}"
    if kind == "missing":
        return "required key is missing"
    msg = str(err.get("msg", "invalid value"))
    return msg.removeprefix("Value error, ")


def config_error(exc: ValidationError, *, file: str, root: Any) -> ConfigError:
    """The first pydantic error as a ConfigError naming file, line and field."""
    errors = exc.errors()
    err = errors[0]
    loc = list(err.get("loc", ()))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ConfigError(_message_for(err) + more, file=file, line=_line_of(root, loc), field=_format_loc(loc) or None)


def _check_evaluator_types(evaluators: Any, *, file: str, root: Any) -> None:
    """Unknown evaluator types and options are errors, pointed at the line of their own key."""
    if not isinstance(evaluators, Mapping):
        return
    from ..evaluators import evaluator_class

    for type_name in evaluators:
        try:
            cls = evaluator_class(type_name)
        except ValueError as exc:
            raise ConfigError(str(exc), file=file, line=_line_of(root, ["evaluators", type_name]),
                              field=f"evaluators.{type_name}") from exc
        # Option typos get the exact line and the nearest option; the evaluator checks the values.
        known = _evaluator_options(cls)
        instances = evaluators[type_name]
        if known is None or not isinstance(instances, list):
            continue
        for i, inst in enumerate(instances):
            for key in inst if isinstance(inst, Mapping) else ():
                loc = ["evaluators", type_name, i, key]
                if key not in known:
                    raise ConfigError(
                        f"unknown {type_name} option {key!r}{_did_you_mean(str(key), sorted(known))}",
                        file=file, line=_line_of(root, loc), field=_format_loc(loc),
                    )
                problem = option_type_problem(type_name, str(key), inst[key])
                if problem is not None:
                    raise ConfigError(problem, file=file, line=_line_of(root, loc), field=_format_loc(loc))


# The type each evaluator option's value must have; what a value of the right type may be is the
# evaluator's own check. An option missing here (a newer one) is left to its evaluator.
_STR, _BOOL, _NUMBER, _STR_LIST, _STR_MAP = "a string", "true or false", "a number", "a list of strings", \
    "a mapping of names to strings"
_OPTION_TYPES: dict[str, dict[str, str]] = {
    "*": {"name": _STR, "severity_floor": _STR},
    "agent_trace": {"check_missing_verification": _BOOL, "verification_tools": _STR_LIST, "dangerous_tools": _STR_LIST},
    "llm_judge": {"model": _STR, "criteria": _STR, "base_url": _STR, "api_key_env": _STR, "temperature": _NUMBER},
    "semantic": {"model": _STR, "threshold": _NUMBER},
    "text_match": {"mode": _STR, "values": _STR_LIST, "case_sensitive": _BOOL},
    "tool_arguments": {"against": _STR, "matching": _STR, "fields": _STR_MAP, "numeric_tolerance": _NUMBER,
                       "optional_fields_scored": _STR},
    "tool_selection": {"mode": _STR, "conformance": _STR, "divergence": _STR},
    "tool_trace_structure": {"call_count_tolerance": _NUMBER, "check_call_count": _BOOL, "check_parallelism": _BOOL,
                             "check_refusals": _BOOL},
}


def _has_type(value: Any, expected: str) -> bool:
    if value is None:  # unset: the evaluator's default
        return True
    if expected == _STR:
        return isinstance(value, str)
    if expected == _BOOL:
        return isinstance(value, bool)
    if expected == _NUMBER:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected == _STR_LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if expected == _STR_MAP:
        return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    return True


def option_type_problem(type_name: str, key: str, value: Any) -> str | None:
    """Why an evaluator option's value has the wrong type (``dangerous_tools: 1``), or None."""
    expected = _OPTION_TYPES.get(type_name, {}).get(key) or _OPTION_TYPES["*"].get(key)
    if expected is None or _has_type(value, expected):
        return None
    return f"must be {expected}, not {_type_name(value)}"


def _type_name(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _evaluator_options(cls: Any) -> frozenset[str] | None:
    """The option keys an evaluator type accepts, when it declares them."""
    options = getattr(cls, "options", None)
    if not isinstance(options, (set, frozenset)):
        return None
    from ..evaluators import _base

    return frozenset(options) | frozenset(getattr(_base, "COMMON_OPTIONS", frozenset({"name", "severity_floor"})))


def parse_config(text: str, *, file: str = CONFIG_FILE, tools_dir: str | os.PathLike[str] | None = None) -> Config:
    """Validate the text of an evalshift.yaml; errors name ``file``, line and field.

    With ``tools_dir`` (the config's folder) each prompt's ``tools_path`` file is read and checked
    too, so a missing or broken tool file fails at load, not in the middle of a run.
    """
    data, root = load_yaml(text, file=file)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError("the top level must be a mapping (version, prompts, defaults, evaluators)", file=file,
                          line=1)
    _check_evaluator_types(data.get("evaluators"), file=file, root=root)
    _check_providers(data.get("providers"), file=file, root=root)
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, file=file, root=root) from exc
    # Unknown evaluator types were caught above; building the instances checks their options.
    from ..evaluators import build_evaluators

    try:
        build_evaluators(config.evaluators)
    except ConfigError as exc:
        loc = parse_path(exc.field or "evaluators")
        raise ConfigError(exc.message, file=file, line=_line_of(root, loc), field=exc.field) from exc
    if tools_dir is not None:
        _check_tool_files(config, Path(tools_dir), file=file, root=root)
        config._tools_dir = Path(tools_dir)
    return config


def _check_tool_files(config: Config, tools_dir: Path, *, file: str, root: Any) -> None:
    from ._tools_file import load_tools_file

    for i, prompt in enumerate(config.prompts):
        if prompt.tools_path and not (tools_dir / prompt.tools_path).is_file():
            loc = ["prompts", i, "tools_path"]
            raise ConfigError(f"tool file {prompt.tools_path} not found (relative to {tools_dir})", file=file,
                              line=_line_of(root, loc), field=_format_loc(loc))
        if prompt.tools_path:
            load_tools_file(tools_dir / prompt.tools_path)  # its own errors name the tool file and line


def find_config(path: str | os.PathLike[str] | None = None) -> Path | None:
    """The config file to read: ``path`` if given, else ``./evalshift.yaml`` when it exists."""
    if path is not None:
        return Path(path)
    default = Path(CONFIG_FILE)
    return default if default.exists() else None


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read evalshift.yaml (default: ./evalshift.yaml; a missing default file means defaults)."""
    p = find_config(path)
    if p is None:
        return Config()
    if not p.exists():
        raise ConfigError("file not found", file=str(p))
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError("not UTF-8 text", file=str(p)) from exc
    return parse_config(text, file=str(p), tools_dir=p.resolve().parent)
