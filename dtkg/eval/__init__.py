"""The evaluation harness: benchmark loaders, metrics, and ``python -m dtkg.eval``."""

from dtkg.eval.datasets import DATASETS, Example, load_dataset
from dtkg.eval.metrics import ACC_MODEL, ACC_TAU, normalize

__all__ = ["ACC_MODEL", "ACC_TAU", "DATASETS", "Example", "load_dataset", "normalize"]
