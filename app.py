"""Entry point of the Hugging Face Space (and of ``python app.py`` locally).

Environment variables are read here, at the edge: DTKG_PROFILE / DTKG_CONFIG / DTKG_KG /
DTKG_MODE … (``dtkg.cli.build_config``); DTKG_FEEDBACK_DB, DTKG_FEEDBACK_DATASET + HF_TOKEN
(``dtkg.feedback.store_from_env``); DTKG_CONCURRENCY, DTKG_QUEUE_SIZE, DTKG_PRELOAD,
DTKG_ALLOW_PRIVATE_ENDPOINTS, DTKG_FAKE_PIPELINE (``dtkg.ui.edge``). On a Space without
DTKG_CONFIG / DTKG_PROFILE, ``space_config/profile.toml`` applies. Gradio itself reads
GRADIO_SERVER_NAME and GRADIO_SERVER_PORT.
"""

from __future__ import annotations

import os

import dtkg.ui.gpu  # noqa: F401 - first: imports `spaces` (ZeroGPU) before anything imports torch
from dtkg.cli import build_config
from dtkg.feedback import store_from_env
from dtkg.ui import create_app, launch_kwargs
from dtkg.ui.edge import app_environment, app_options, preload, should_preload

env = app_environment(os.environ)
config = build_config(environ=env)
if should_preload(env):
    preload(config)
demo = create_app(config, feedback_store=store_from_env(env), **app_options(config, env))

if __name__ == "__main__":
    demo.launch(**launch_kwargs())
