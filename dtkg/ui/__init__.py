"""The Gradio web app (``create_app``) and its handlers."""

from dtkg.ui.app import create_app, launch_kwargs

__all__ = ["create_app", "launch_kwargs"]
