"""``evalshift init``: write the capture-first evalshift.yaml of seed 001, commented block by block.

The template is the seed's minimal agent config; the comments say what each block is for.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._exceptions import ConfigError
from .._io import atomic_write_bytes
from ._config import CONFIG_FILE, parse_config

DEFAULT_SOURCE_MODEL = "gemini-2.5-flash"
DEFAULT_TARGET_MODEL = "gemini-3.1-flash-lite-preview"

TEMPLATE = """\
# evalshift.yaml — capture-first configuration.
#
# The golden suite comes from captures of your own agent: instrument it with evalshift_sdk,
# run real traffic with EVALSHIFT_CAPTURE=1, then `evalshift capture sync`. Each promoted
# example carries its recorded toolset and its expected_tools, so nothing here lists tools.

# Config format version.
version: 1

# prompts: what `evalshift run` replays. Capture-first, one prompt replays every captured
# user message as recorded: `content` is the template and "{{input}}" is the user message
# of the capture's first round. `detection: manual` means the prompts are listed here.
# Add `tools_path: FILE` (YAML or JSON, Anthropic or OpenAI tool shapes) to offer a fixed
# toolset to examples that carry none; `evalshift tools sync app/tools.py` sets it for you.
prompts:
  - id: replay
    detection: manual
    content: "{{input}}"
    variables: [input]

# defaults: the models `evalshift compare` uses when --from / --to are not given.
# Names are provider:NAME (openai:, anthropic:, gemini:) or a bare name whose prefix says
# the provider (gpt-, o1-/o3-/o4-, claude-, gemini-).
defaults:
  source_model: {source_model}        # the model in production today
  target_model: {target_model}        # the candidate you want to switch to

# evaluators: what `evalshift evaluate` scores on every example, source vs target.
# Each entry becomes its own comparison in analysis.json (Benjamini-Hochberg corrected).
evaluators:
  tool_selection:
    - name: routing
      conformance: expected         # each side vs example.expected_tools
      divergence: set               # target vs source, Jaccard on names
      severity_floor: high          # a regression here is never filed below high

  # Optional — same tools, different argument values? Uncomment to score each call's arguments.
  # `against: expected` scores both sides against the arguments recorded in the captures
  # (expected_tools[].arguments): correctness, not drift. Use it when the suite came from
  # captures, as here; without it the target is scored against the source, whose own score is
  # pinned at 1.0 however wrong it is. A field present on one side only scores 0.5;
  # `optional_fields_scored: strict` makes it 0. `numeric_tolerance` is the relative error at
  # which a `numeric` field scores 0 (`fields: {{amount_usd: numeric}}` picks a field's strategy).
  # tool_arguments:
  #   - name: routing_args
  #     against: expected             # each side vs the recorded arguments (seed 000)
  #     numeric_tolerance: 0.05       # default 0.05 (5 %)

  # Optional — the shape of the loop: call counts, parallel calls, refusals.
  # tool_trace_structure:
  #   - name: routing_structure

# Optional — the budget a target must stay within to pass:
# migration_policy:
#   max_tool_argument_drift: 0.01
#   tool_argument_drift_floor: 0.9

# Optional — replay the source twice per example. Comparisons of the target against the source
# (divergence, tool_arguments against the source, ...) are tested against the source's own
# run-to-run drift; examples promoted from captures of the source model get that baseline free
# from their recording, the others need a second source run (one more call per example):
# `batch: true` sends every replay through the providers' batch APIs: half the price, results
# within their 24-hour window (`evalshift run/compare --batch` does it for one run):
# replay:
#   source_repeats: 2
#   batch: true

# Optional — how each model is reached; environment variables (OPENAI_BASE_URL,
# ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL, *_API_KEY) work as well. A key is a provider
# (openai, anthropic, gemini) or one model of it ("openai:NAME"), whose entry goes over the
# provider's: here one model is served by a local OpenAI-compatible server (vLLM, Ollama).
# Each entry takes base_url, api_key or api_key_env, headers, rpm, concurrency, timeout.
# providers:
#   openai:
#     api_key_env: OPENAI_API_KEY     # the variable holding the key
#     rpm: 500                        # requests per minute
#   "openai:my-local-model":
#     base_url: http://127.0.0.1:8000/v1   # vLLM; Ollama is http://127.0.0.1:11434/v1
"""


def render_template(*, source_model: str = DEFAULT_SOURCE_MODEL, target_model: str = DEFAULT_TARGET_MODEL) -> str:
    """The commented capture-first config with the given default models."""
    from ._tools_sync import yaml_scalar

    return TEMPLATE.format(source_model=yaml_scalar(source_model), target_model=yaml_scalar(target_model))


def write_init(
    path: str | os.PathLike[str] = CONFIG_FILE,
    *,
    force: bool = False,
    source_model: str = DEFAULT_SOURCE_MODEL,
    target_model: str = DEFAULT_TARGET_MODEL,
) -> Path:
    """Write the capture-first evalshift.yaml; an existing file is kept unless ``force``."""
    target = Path(path)
    if target.exists() and not force:
        raise ConfigError("already exists; pass --force to overwrite it", file=str(target))
    text = render_template(source_model=source_model, target_model=target_model)
    parse_config(text, file=str(target))  # never write a config we would refuse to read
    atomic_write_bytes(target, text.encode("utf-8"))
    return target
