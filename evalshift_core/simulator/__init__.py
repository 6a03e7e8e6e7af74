"""A loopback provider simulator: scripted models behind real provider wire formats.

OpenAI Chat and Responses, Anthropic Messages, Gemini generateContent (JSON and SSE), with
injectable latency and 429s, and seeded noise that makes two replays of one model differ as real
agents do; the demo's model server and the tests' server for the official SDKs.
"""

from ._noise import PRESETS, NoiseProfile
from ._rules import ModelScript, Reply, Rule, SimRequest, load_scripts
from ._scripts_file import load_script_file
from ._server import Simulator

__all__ = ["Simulator", "ModelScript", "Rule", "Reply", "SimRequest", "NoiseProfile", "PRESETS", "load_scripts",
           "load_script_file"]
