"""The DTKG pipeline: classification, the parallel and chained tracks, denoising, answers.

``Pipeline(config).run(question)`` streams typed events and ends with the trace;
``Pipeline(config).answer(question)`` returns the trace. See :mod:`dtkg.pipeline.core`.
"""

from dtkg.pipeline.core import Pipeline
from dtkg.pipeline.summary import summarise

__all__ = ["Pipeline", "summarise"]
