"""The README quickstarts run as written against the simulator (every bash and python block, in order)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from cli_support import REPO


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quickstart_script(readme: str, workdir: Path, port: int) -> str:
    """One bash script: the bash blocks verbatim, each python block run from a file in its place.

    Only the simulator port changes, so parallel test runs never collide on 8765.
    """
    section = readme.split("<!-- quickstarts:start", 1)[1].split("<!-- quickstarts:end -->", 1)[0]
    parts = ["set -eu", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for i, (lang, body) in enumerate(re.findall(r"```(bash|python)\n(.*?)```", section, re.DOTALL)):
        body = body.replace("8765", str(port))
        if lang == "bash":
            parts.append(body)
        else:
            (workdir / f"quickstart_{i}.py").write_text(body)
            parts.append(f"python quickstart_{i}.py")
    return "\n".join(parts) + "\n"


def test_readme_quickstarts_run_as_written(tmp_path):
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    script = quickstart_script((REPO / "README.md").read_text(), tmp_path, _free_port())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALSHIFT_", "OPENAI_", "VIRTUAL_ENV"))}
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Verdict: FAIL" in out.stdout  # 2. Build a suite
    assert "notify_security_team" in out.stdout
    assert re.search(r"^fail \d+ .*report\.html$", out.stdout, re.MULTILINE)  # 3. the notebook block
    assert "gate exit code: 2" in out.stdout  # 4. Gate a CI job
    assert json.loads((tmp_path / "evalshift-result.json").read_text())["verdict"] == "fail"
    assert "<testsuites" in (tmp_path / "evalshift-junit.xml").read_text()
    assert any((tmp_path / ".evalshift/captures").glob("*.jsonl"))  # 1. Instrument an agent
