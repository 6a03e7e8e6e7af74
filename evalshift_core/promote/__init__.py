"""Captures become golden-suite examples with rounds and fixtures; ``capture sync``."""
