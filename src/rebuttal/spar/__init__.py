"""SPAR-Hate: segmenter, three role agents, auditor and reassembly for structured hate parsing."""

from rebuttal.spar.pipeline import ParseDetail, SparParser, default_parser
from rebuttal.spar.settings import ROLES, SparSettings
from rebuttal.data.vocab import TRACKS, Track

__all__ = ["ROLES", "TRACKS", "Track", "ParseDetail", "SparParser", "SparSettings", "default_parser",
           "run_spar_batch", "export_traces", "teacher_rows"]


def __getattr__(name: str):  # batch and trace helpers on demand (they pull in tqdm)
    if name == "run_spar_batch":
        from rebuttal.spar.batch import run_spar_batch
        return run_spar_batch
    if name in ("export_traces", "teacher_rows"):
        from rebuttal.spar import traces
        return getattr(traces, name)
    raise AttributeError(name)
