"""A loopback provider simulator: scripted models behind real provider wire formats.

Used as the demo's embedded model server and as the tests' server for the official SDKs.
"""

from ._rules import ModelScript, Reply, Rule, SimRequest, load_scripts
from ._server import Simulator

__all__ = ["Simulator", "ModelScript", "Rule", "Reply", "SimRequest", "load_scripts"]
