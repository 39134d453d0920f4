"""DALI's nvidia.dali.pipeline.experimental: pipeline_def lives here in older DALI
scripts. It is godali's pipeline_def."""

from . import pipeline_def

__all__ = ["pipeline_def"]
