"""`evalshift simulator`: scripted models behind the OpenAI wire format, for the quickstarts."""

from __future__ import annotations

import os
import signal
import subprocess

import openai
from cli_support import EXE


def test_simulator_serves_a_scripts_file_until_sigterm(tmp_path):
    (tmp_path / "scripts.yaml").write_text(
        "echo-model:\n"
        "  - when: {user_matches: 'order (?P<order_id>[A-Z]\\d+)'}\n"
        "    reply: {tool_calls: [{name: lookup_order, arguments: {order_id: '{order_id}'}}]}\n"
        "  - reply: {text: 'hello'}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    proc = subprocess.Popen([EXE, "simulator", "--port", "0", "--scripts", "scripts.yaml"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[0].startswith("simulator listening on http://127.0.0.1:")
        base_url = lines[1].strip().removeprefix("OPENAI_BASE_URL=")
        assert lines[2].strip() == "models: echo-model"
        client = openai.OpenAI(base_url=base_url, api_key="sk-sim", max_retries=0)
        response = client.chat.completions.create(
            model="echo-model", messages=[{"role": "user", "content": "where is order A1001?"}])
        call = response.choices[0].message.tool_calls[0]
        assert (call.function.name, call.function.arguments) == ("lookup_order", '{"order_id":"A1001"}')
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


def test_a_busy_port_is_a_one_line_error(tmp_path):
    import socket

    from cli_support import assert_user_error, run_cli

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert_user_error(run_cli("simulator", "--port", str(port), cwd=tmp_path), f"cannot listen on 127.0.0.1:{port}")
