"""Capture files in: OTLP/JSON decoding, turn assembly, GenAI semconv spans, imported traces."""
