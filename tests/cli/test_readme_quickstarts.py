"""The README quickstarts run as written against the simulator (every bash and python block, in order)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from cli_support import REPO


def quickstart_script(readme: str, workdir: Path) -> str:
    """One bash script: the bash blocks verbatim, each python block run from a file in its place.

    Nothing is rewritten: the simulator block binds a free port (``--port 0``) and reads the URL
    it prints, so parallel test runs never collide.
    """
    section = readme.split("<!-- quickstarts:start", 1)[1].split("<!-- quickstarts:end -->", 1)[0]
    parts = ["set -eu", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for i, (lang, body) in enumerate(re.findall(r"```(bash|python)\n(.*?)```", section, re.DOTALL)):
        if lang == "bash":
            parts.append(body)
        else:
            (workdir / f"quickstart_{i}.py").write_text(body)
            parts.append(f"python quickstart_{i}.py")
    return "\n".join(parts) + "\n"


def _start_simulator(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    """``evalshift simulator --port 0`` and the OPENAI_BASE_URL it prints."""
    proc = subprocess.Popen([str(Path(sys.executable).parent / "evalshift"), "simulator", "--port", "0"],
                            cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    listening = proc.stdout.readline()
    assert listening.startswith("simulator listening on http://127.0.0.1:"), listening + proc.stderr.read()
    base_url = proc.stdout.readline().strip().removeprefix("OPENAI_BASE_URL=")
    assert base_url == listening.split(" on ", 1)[1].strip() + "/v1"
    return proc, base_url


def test_two_simulators_on_port_0_get_different_free_ports_and_print_them(tmp_path):
    """The quickstart's `--port 0`: each simulator binds its own port and prints the URL it got."""
    import openai

    procs: list[subprocess.Popen[str]] = []
    try:
        urls = []
        for _ in range(2):
            proc, url = _start_simulator(tmp_path)
            procs.append(proc)
            urls.append(url)
        ports = [int(re.search(r":(\d+)/v1$", u).group(1)) for u in urls]
        assert ports[0] != ports[1] and all(p > 0 for p in ports)
        for url in urls:  # each printed URL is the one serving: the official client gets an answer
            client = openai.OpenAI(base_url=url, api_key="sk-sim", max_retries=0, timeout=30)
            reply = client.chat.completions.create(model="sim-baseline",
                                                   messages=[{"role": "user", "content": "hello"}])
            assert reply.choices[0].message is not None
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
            proc.stdout.close()
            proc.stderr.close()


def test_readme_quickstarts_run_as_written(tmp_path):
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    script = quickstart_script((REPO / "README.md").read_text(), tmp_path)
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
