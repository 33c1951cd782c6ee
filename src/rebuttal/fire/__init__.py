"""FIRE: category-informed, evidence-grounded counterspeech."""

from __future__ import annotations

from rebuttal.fire.analyst import Analyst, CategoryPolicy
from rebuttal.fire.baselines import BASELINES, Baseline
from rebuttal.fire.generator import Generator
from rebuttal.fire.pipeline import ABLATIONS, FirePipeline, FireSettings, settings_for
from rebuttal.fire.factory import build_system, default_pipeline

__all__ = [
    "ABLATIONS", "BASELINES", "Analyst", "Baseline", "CategoryPolicy", "FirePipeline",
    "FireSettings", "Generator", "build_system", "default_pipeline", "settings_for",
]
