"""Stalwart: a deep-learning training platform that runs Determined AI experiments unchanged."""

__version__ = "0.1.0"
