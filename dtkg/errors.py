"""The few exception types of dtkg.

Every message says what went wrong *and how to fix it*; the edges (CLI, Gradio app)
turn these into a one-line error or a ``gr.Error`` without a traceback.
"""

from __future__ import annotations


class DTKGError(Exception):
    """Base class: anything dtkg raises on purpose."""


class ConfigError(DTKGError):
    """A setting is missing, out of bounds or inconsistent (config file, CLI flag, env var)."""


class InputError(DTKGError):
    """The user's question (or another user input) cannot be processed as given."""


class ModelError(DTKGError):
    """A model backend could not load or answer (weights unreachable, server down, bad reply)."""


class KGError(DTKGError):
    """A knowledge-graph query failed (endpoint unreachable, timeout, rate limit, bad reply)."""
