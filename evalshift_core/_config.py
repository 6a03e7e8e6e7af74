"""evalshift.yaml: the prompts, default models, evaluators and migration policy."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._exceptions import ConfigError
from ._policy import MigrationPolicy

CONFIG_FILE = "evalshift.yaml"


class Prompt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    """Prompt id; captures name it with ``turn(prompt_id=...)``."""
    detection: str = "manual"
    """How prompts are found (``manual``)."""
    content: str = "{input}"
    """Template of the user message; ``{input}`` renders the recorded one."""
    variables: list[str] = Field(default_factory=lambda: ["input"])
    """Template variables."""
    tools_path: str | None = None
    """Tool definitions file; setting it makes the prompt agent-style."""


class Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_model: str | None = None
    """The model in production today."""
    target_model: str | None = None
    """The candidate."""


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    prompts: list[Prompt] = Field(default_factory=lambda: [Prompt(id="replay")])
    defaults: Defaults = Field(default_factory=Defaults)
    evaluators: dict[str, Any] = Field(default_factory=lambda: {"tool_selection": [{"name": "tool_selection"}]})
    migration_policy: MigrationPolicy = Field(default_factory=MigrationPolicy)
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per-provider client settings (base_url, api_key_env, ...)."""

    def template_for(self, prompt_id: str | None) -> str:
        for p in self.prompts:
            if p.id == prompt_id:
                return p.content
        return self.prompts[0].content if len(self.prompts) == 1 else "{input}"


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read evalshift.yaml (default: ./evalshift.yaml; a missing default file means defaults)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    p = Path(path or CONFIG_FILE)
    if not p.exists():
        if path is None:
            return Config()
        raise ConfigError("file not found", file=str(p))
    try:
        data = YAML(typ="safe").load(p.read_text(encoding="utf-8")) or {}
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=str(p),
                          line=mark.line + 1 if mark else None) from exc
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(err["msg"], file=str(p), field=".".join(str(x) for x in err["loc"])) from exc
