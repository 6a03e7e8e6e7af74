"""`evalshift simulator`: scripted models behind the OpenAI wire format, for the quickstarts."""

from __future__ import annotations

import contextlib
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


NOISY_SCRIPTS = (
    "noisy-model:\n"
    "  noise: {preset: realistic, seed: 1, read_only_tools: [lookup_order]}\n"
    "  rules:\n"
    "    - when: {user_matches: 'order (?P<order_id>[A-Z]\\d+)', after: []}\n"
    "      reply: {tool_calls: [{name: lookup_order, arguments: {order_id: '{order_id}'}},\n"
    "                           {name: flag_ticket, arguments: {reason: 'late delivery', days: 3}}]}\n"
    "    - when: {after: [lookup_order, flag_ticket]}\n"
    "      reply: {text: 'Your order has shipped.'}\n"
)
SCRIPTED_ROUND_1 = [("lookup_order", '{"order_id":"A1001"}'), ("flag_ticket", '{"reason":"late delivery","days":3}')]


@contextlib.contextmanager
def serving(cwd, *args):
    """``evalshift simulator --port 0 ARGS`` in ``cwd``, yielding an openai client on it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    proc = subprocess.Popen([EXE, "simulator", "--port", "0", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        yield openai.OpenAI(base_url=lines[1].strip().removeprefix("OPENAI_BASE_URL="), api_key="sk-sim", max_retries=0)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


def _answers(client, n=12):
    """n first rounds, then n second rounds, of order tickets: (text, [(name, arguments)])."""
    out = []
    for i in range(n):
        message = client.chat.completions.create(
            model="noisy-model", messages=[{"role": "user", "content": f"where is order A100{i % 3}?"}]).choices[0].message
        out.append((message.content, [(c.function.name, c.function.arguments) for c in message.tool_calls or []]))
    history = [{"role": "assistant", "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(SCRIPTED_ROUND_1)]}, *[{"role": "tool", "tool_call_id": f"c{i}", "content": "ok"}
                                                          for i in range(2)]]
    for _ in range(n):
        message = client.chat.completions.create(
            model="noisy-model", messages=[{"role": "user", "content": "where is order A1001?"}, *history]
        ).choices[0].message
        out.append((message.content, [(c.function.name, c.function.arguments) for c in message.tool_calls or []]))
    return out


def test_a_scripts_file_with_noise_answers_by_its_seed(tmp_path):
    (tmp_path / "scripts.yaml").write_text(NOISY_SCRIPTS)
    with serving(tmp_path, "--scripts", "scripts.yaml", "--noise-seed", "5") as client:
        first = _answers(client)
    with serving(tmp_path, "--scripts", "scripts.yaml", "--noise-seed", "5") as client:
        assert _answers(client) == first
    with serving(tmp_path, "--scripts", "scripts.yaml") as client:
        assert _answers(client) != first  # the file's own seed
    scripted = [(None, [(n, a.replace("A1001", f"A100{i % 3}")) for n, a in SCRIPTED_ROUND_1]) for i in range(12)]
    scripted += [("Your order has shipped.", [])] * 12
    assert first != scripted
    assert sum(a == s for a, s in zip(first, scripted)) < 12
    with serving(tmp_path, "--scripts", "scripts.yaml", "--noise", "none") as client:
        assert _answers(client) == scripted


def test_a_bad_noise_setting_is_a_one_line_error_naming_file_line_and_field(tmp_path):
    from cli_support import assert_user_error, run_cli

    (tmp_path / "scripts.yaml").write_text(NOISY_SCRIPTS.replace("seed: 1,", "seed: 1, swap_call: 0.5,"))
    assert_user_error(run_cli("simulator", "--port", "0", "--scripts", "scripts.yaml", cwd=tmp_path),
                      "scripts.yaml:2: noisy-model.noise.swap_call: unknown noise setting", "did you mean 'swap_calls'")


def test_the_noise_option_offers_every_preset():
    from evalshift_core.cli._main import simulator
    from evalshift_core.simulator import PRESETS

    option = next(p for p in simulator.params if p.name == "noise")
    assert list(option.type.choices) == list(PRESETS)
