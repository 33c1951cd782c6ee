"""`TaggerParser`: the trained tagger alone, as a SPAR system (`spar-tagger`) with the same
`parse` / `parse_detailed` interface and SparResult rows as `SparParser` (no LLM calls)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rebuttal import config
from rebuttal.spar.pipeline import ParseDetail, resolve_track
from rebuttal.spar.spans import ground_tuples
from rebuttal.spar.tagger.core import CONFIG, SpanTagger, load_tagger
from rebuttal.data.vocab import NON_HATE, Track
from rebuttal.types import InputError, SparResult, TraceStep, check_post

SYSTEM = "spar-tagger"


PACKAGED = Path(__file__).parent / "data"  # the shipped taggers (one folder per track; MODEL_CARD.md in each)


def default_root() -> Path:
    """Where `rebuttal spar train` puts taggers by default: <REBUTTAL_HOME>/spar-tagger/<track>."""
    return config.home_dir() / "spar-tagger"


def tagger_folder(root: str | Path, track: str) -> Path:
    """`root` itself when it holds one tagger, else root/<track>; Chinese tracks share a tagger
    (zh-main can use a zh-quad tagger and the other way round: both have the group head)."""
    root = Path(root)
    if (root / CONFIG).exists():
        return root
    options = [track] + [t.value for t in Track if t.lang == Track(track).lang and t.value != track]
    for name in options:
        if (root / name / CONFIG).exists():
            return root / name
    return root / track


class TaggerParser:
    system = SYSTEM

    def __init__(self, root: str | Path | None = None, taggers: dict[str, SpanTagger] | None = None):
        # A folder given is the only place looked at; otherwise the user's own taggers come first.
        self.roots = [Path(root)] if root else [default_root(), PACKAGED]
        self._taggers: dict[Path, SpanTagger] = {}
        self._by_track = dict(taggers or {})
        self._lock = threading.Lock()

    def tagger(self, track: str) -> SpanTagger:
        if track in self._by_track:
            return self._by_track[track]
        folders = [tagger_folder(root, track) for root in self.roots]
        folder = next((f for f in folders if (f / CONFIG).exists()), folders[0])
        with self._lock:
            if folder not in self._taggers:
                tagger = load_tagger(folder)
                if Track(tagger.track).lang != Track(track).lang:
                    raise ValueError(f"the tagger in {folder} is for {tagger.track}, not {track}")
                self._taggers[folder] = tagger
            return self._taggers[folder]

    def parse(self, text: object, lang: str = "en", track: str | None = None, id: str | None = None) -> SparResult:
        return self.parse_detailed(text, lang=lang, track=track, id=id).result

    def parse_detailed(self, text: object, lang: str = "en", track: str | None = None,
                       id: str | None = None) -> ParseDetail:
        shown = text if isinstance(text, str) else repr(text)[:200]
        try:
            track = resolve_track(lang, track)
            post = check_post(text)
        except InputError as exc:
            return ParseDetail(SparResult(id=id, text=shown, lang=lang if lang in ("en", "zh") else "en",
                                          track=str(track or ""), system=SYSTEM, status="error", message=str(exc)))
        result = SparResult(id=id, text=post, lang=lang, track=track, system=SYSTEM)
        tagger = self.tagger(track)  # loaded once, outside the post's latency
        started = time.perf_counter()
        tuples = tagger.predict([post])[0]
        tuples = [t.model_copy(update={"group": (t.group or NON_HATE) if t.label else NON_HATE})
                  if Track(track).has_group else t.model_copy(update={"group": None}) for t in tuples]
        grounded, reasons = ground_tuples(tuples, post)  # spans are slices already; a cheap guarantee
        step = TraceStep(stage="tagger", model=tagger.name, latency_s=round(time.perf_counter() - started, 4),
                         attempts=0, notes=[f"{len(grounded)} tuples"] + reasons)
        result.trace.add(step)
        for reason in reasons:
            result.trace.flag(f"tagger: {reason}")
        result.tuples = grounded
        if not grounded:
            result.status = "flagged"
            result.message = "the tagger found no argument span in this post"
            result.trace.flag("no tuple recovered")
        return ParseDetail(result)
