"""The ``.evalshift`` folder: suites, toolsets and runs, read and written under one path rule."""
