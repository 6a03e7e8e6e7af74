import subprocess
import sys


def test_import_evalshift_sdk_loads_no_heavy_or_provider_module():
    code = (
        "import evalshift_sdk, sys;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'numpy','scipy','pydantic','openai','anthropic','google'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_import_evalshift_sdk_schema_loads_no_heavy_provider_or_otel_module():
    # The core reads captures through this module: it stays a plain list of names and functions.
    code = (
        "import evalshift_sdk.schema, sys;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'numpy','scipy','pydantic','openai','anthropic','google','opentelemetry','wrapt'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
