"""SPAR-Hate structured hate parsing: the trained span tagger (the default, `spar-tagger`), and
the segmenter, three role agents, auditor and reassembly (`spar`), or the agents reviewing the
tagger's tuples (`spar-tagger+audit`). `default_parser(system=...)` builds any of them."""

from rebuttal.spar.pipeline import ParseDetail, SparParser
from rebuttal.spar.settings import DEFAULT_SYSTEM, ROLES, SYSTEMS, SparSettings
from rebuttal.spar.systems import default_parser
from rebuttal.data.vocab import TRACKS, Track

__all__ = ["DEFAULT_SYSTEM", "ROLES", "SYSTEMS", "TRACKS", "Track", "ParseDetail", "SparParser", "SparSettings",
           "default_parser", "run_spar_batch", "export_traces", "teacher_rows"]


def __getattr__(name: str):  # batch and trace helpers on demand (they pull in tqdm)
    if name == "run_spar_batch":
        from rebuttal.spar.batch import run_spar_batch
        return run_spar_batch
    if name in ("export_traces", "teacher_rows"):
        from rebuttal.spar import traces
        return getattr(traces, name)
    raise AttributeError(name)
