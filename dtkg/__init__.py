"""DTKG: dual-track knowledge-graph-verified multi-hop question answering."""

from dtkg.config import DTKGConfig
from dtkg.errors import ConfigError, DTKGError, InputError, KGError, ModelError

__version__ = "0.1.0"

__all__ = [
    "DTKGConfig",
    "DTKGError",
    "ConfigError",
    "InputError",
    "KGError",
    "ModelError",
    "__version__",
]
