"""SPAR-Hate end to end: segmenter → role agents → auditor → reassembly (or the 0-shot baseline)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from rebuttal.llm import ChatModel, LLMError
from rebuttal.spar.arbiter import arbitrate
from rebuttal.spar.auditor import UnitAudit, audit_unit, cluster_tuple, confidence, fallback_tuple, select
from rebuttal.spar.baseline import zero_shot
from rebuttal.spar.calls import Stage
from rebuttal.spar.lexicon import Lexicon, load_lexicon
from rebuttal.spar.reassembly import reassemble
from rebuttal.spar.roles import Candidate, run_roles
from rebuttal.spar.segmenter import Unit, segment
from rebuttal.spar.settings import SparSettings
from rebuttal.data.vocab import IMPLICIT_TARGET, NON_HATE, OUTPUT_IMPLICIT, TRACKS, Track, normalize_group
from rebuttal.spar.spans import ground_tuples, output_target
from rebuttal.types import InputError, SparResult, SparTuple, check_post


@dataclass
class ParseDetail:
    """A result plus what the auditor saw per unit (for teacher traces)."""

    result: SparResult
    audits: list[UnitAudit] = field(default_factory=list)
    prompt_versions: list[str] = field(default_factory=list)


def resolve_track(lang: str, track: str | None) -> str:
    if lang not in ("en", "zh"):
        raise InputError(f"lang must be 'en' or 'zh', got {lang!r}")
    track = track or Track.default_for(lang).value
    if track not in TRACKS:
        raise InputError(f"unknown track {track!r}; choose one of {', '.join(TRACKS)}")
    if Track(track).lang != lang:
        raise InputError(f"track {track} does not fit lang {lang!r} (en → en-main, zh → zh-main or zh-quad)")
    return Track(track).value


class SparParser:
    """`SparParser(model, settings=SparSettings(...))`; `model` may be a ChatModel or a
    zero-argument factory, called once on first use."""

    def __init__(self, model: ChatModel | Callable[[], ChatModel], settings: SparSettings | None = None,
                 *, lexicon: Lexicon | None = None, tagger=None):
        """`tagger`: a trained span tagger's parser (`TaggerParser`); its tuples join the role
        agents' candidates as a fourth role, so the auditor weighs them like any other role."""
        self.settings = settings or SparSettings()
        self.tagger = tagger
        self._model = model if isinstance(model, ChatModel) else None
        self._factory = None if isinstance(model, ChatModel) else model
        self._lock = threading.Lock()
        self.lexicon = lexicon
        if lexicon is None and self.settings.lexicon_path is not None:
            self.lexicon = load_lexicon(self.settings.lexicon_path)  # fails early with a clear message

    @property
    def model(self) -> ChatModel:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._factory()
        return self._model

    @property
    def system(self) -> str:
        return self.settings.system + ("+tagger" if self.tagger is not None and not self.settings.zero_shot else "")

    @property
    def active_roles(self) -> tuple[str, ...]:
        return (*self.settings.roles, TAGGER_ROLE) if self.tagger is not None else self.settings.roles

    def parse(self, text: object, lang: str = "en", track: str | None = None, id: str | None = None) -> SparResult:
        return self.parse_detailed(text, lang=lang, track=track, id=id).result

    def parse_detailed(self, text: object, lang: str = "en", track: str | None = None,
                       id: str | None = None) -> ParseDetail:
        shown = text if isinstance(text, str) else repr(text)[:200]
        safe_lang = lang if lang in ("en", "zh") else "en"
        try:
            track = resolve_track(lang, track)
            post = check_post(text)
        except InputError as exc:
            return ParseDetail(SparResult(id=id, text=shown, lang=safe_lang, track=str(track or ""),
                                          system=self.system, status="error", message=str(exc)))
        result = SparResult(id=id, text=post, lang=lang, track=track, system=self.system)
        detail = ParseDetail(result)
        stages: list[Stage] = []
        try:
            if self.settings.zero_shot:
                tuples, stage = zero_shot(self.model, post, track, self.settings)
                stages.append(stage)
                result.tuples = tuples
            else:
                self._run_spar(post, id or "post", track, stages, detail)
        except LLMError as exc:
            result.status = "error"
            result.message = f"the model failed: {exc}"
        for stage in stages:
            result.trace.add(stage.step())
            for reason in stage.flags:
                result.trace.flag(f"{stage.name}: {reason}")
            for version in stage.prompt_versions:
                if version not in detail.prompt_versions:
                    detail.prompt_versions.append(version)
        result.llm_calls = sum(s.calls for s in stages)
        if result.status != "error" and not result.tuples:
            result.status = "flagged"
            result.message = "no tuple could be recovered for this post"
            result.trace.flag("no tuple recovered")
        return detail

    def _run_spar(self, post: str, post_id: str, track: str, stages: list[Stage], detail: ParseDetail) -> None:
        s = self.settings
        units, seg_stage = segment(self.model, post, post_id, s)
        stages.append(seg_stage)
        lexicon = self.lexicon if Track(track).lang == "zh" else None
        role_stage = Stage("roles")
        stages.append(role_stage)
        results = run_roles(self.model, [(u, r, "") for u in units for r in s.roles], track, s, lexicon, role_stage)
        if self.tagger is not None:
            tagged = self.tagger.parse(post, lang=Track(track).lang, track=track).tuples
            results.update(tagger_candidates(units, tagged))
            role_stage.note(f"tagger: {len(tagged)} tuples")
        audits = []
        for unit in units:
            candidates = [c for r in self.active_roles for c in (results.get((unit.group_id, r)) or [])]
            missing = [r for r in s.roles if results.get((unit.group_id, r)) is None]
            audits.append(UnitAudit(unit=unit, candidates=candidates, missing_roles=missing))
        detail.audits = audits
        audit_stage = Stage("auditor")
        if not s.use_auditor:
            audit_stage.note("ablation: no auditor, every role tuple kept")
            for audit in audits:
                audit.lane = "unaudited"
                audit.tuples = [raw_tuple(c, track) for c in audit.candidates if c.argument.strip()]
        else:
            for audit in audits:
                audit_unit(audit, post, track, self.active_roles, s)
            if s.regenerate:
                self._regenerate(post, track, audits, lexicon, stages)
            conflicts = [a for a in audits if a.lane == "conflict"]
            if conflicts and s.use_arbiter:
                arbitrate(self.model, conflicts, post, track, s, self.active_roles, audit_stage)
            for audit in audits:
                audit.selected = select(audit, s)
                audit.confidence = confidence(audit.clusters)
                audit.tuples = [cluster_tuple(c, audit.unit, post, track) for c in audit.selected]
                if not audit.tuples:
                    fallback = fallback_tuple(audit.candidates, audit.unit, post, track)
                    audit.tuples = [fallback] if fallback else []
                    audit.notes.append("fallback: best low-quality candidate" if fallback
                                       else "no usable candidate; unit yields no tuple")
                    audit_stage.flag(f"{audit.unit.group_id}: fallback to the best low-quality candidate"
                                     if fallback else f"{audit.unit.group_id}: no usable candidate")
                audit_stage.note(
                    f"{audit.unit.group_id}: lane={audit.lane}"
                    + (f" tags={','.join(audit.tags)}" if audit.tags else "")
                    + f" clusters={len(audit.clusters)} kept={len(audit.selected)} confidence={audit.confidence}"
                    + (f" defects={'; '.join(audit.defects)}" if audit.defects else "")
                    + "".join(f" | {n}" for n in audit.notes))
        stages.append(audit_stage)
        merge = Stage("reassembly")
        merged = reassemble([(a.unit.group_id, a.tuples) for a in audits], dedup=s.dedup)
        merge.note(f"{len(units)} units -> {len(merged.tuples)} tuples, {merged.duplicates_removed} exact duplicates removed")
        merge.note("provenance: " + "; ".join(",".join(p) for p in merged.provenance))
        stages.append(merge)
        grounded, reasons = ground_tuples(merged.tuples, post)
        for reason in reasons:
            merge.flag(f"grounding: {reason}")
        detail.result.tuples = grounded

    def _regenerate(self, post: str, track: str, audits: list[UnitAudit], lexicon: Lexicon | None,
                    stages: list[Stage]) -> None:
        """One bounded round: re-ask the roles that left a unit defective, saying what was wrong."""
        s = self.settings
        jobs = []
        for audit in audits:
            if audit.lane != "defective":
                continue
            for role in s.roles:
                mine = [c for c in audit.candidates if c.role == role]
                if role in audit.missing_roles:
                    jobs.append((audit.unit, role, "no valid JSON answer was received"))
                elif not any(c.quality >= s.quality_threshold and c.features.get("grounding", 0) >= 0.8
                             for c in mine):
                    jobs.append((audit.unit, role, "the argument was not an exact substring of the focus"))
        if not jobs:
            return
        stage = Stage("regeneration")
        stages.append(stage)
        fresh = run_roles(self.model, jobs, track, s, lexicon, stage)
        by_unit = {a.unit.group_id: a for a in audits}
        for unit, role, _problem in jobs:
            audit = by_unit[unit.group_id]
            new = fresh.get((unit.group_id, role))
            audit.regenerated.append(role)
            if new is None:
                continue
            audit.candidates = [c for c in audit.candidates if c.role != role] + new
            if role in audit.missing_roles:
                audit.missing_roles.remove(role)
        for audit in {a.unit.group_id: a for a in (by_unit[u.group_id] for u, _, _ in jobs)}.values():
            audit_unit(audit, post, track, self.active_roles, s)
            stage.note(f"{audit.unit.group_id}: regenerated {','.join(audit.regenerated)} -> lane={audit.lane}")


TAGGER_ROLE = "tagger"


def tagger_candidates(units: list[Unit], tuples: list[SparTuple]) -> dict[tuple[str, str], list[Candidate]]:
    """The tagger's tuples as candidates of a fourth role, each in the first unit whose text
    holds its argument (the tagger reads the whole post; the roles read one unit each)."""
    found: dict[tuple[str, str], list[Candidate]] = {(u.group_id, TAGGER_ROLE): [] for u in units}
    for t in tuples:
        unit = next((u for u in units if t.argument and t.argument in u.group_text), units[0])
        target = IMPLICIT_TARGET if t.target == OUTPUT_IMPLICIT else t.target
        found[(unit.group_id, TAGGER_ROLE)].append(Candidate(
            role=TAGGER_ROLE, group_id=unit.group_id, target=target, argument=t.argument, label=t.label,
            group=t.group, rationale="trained span tagger"))
    return found


def raw_tuple(c: Candidate, track: str) -> SparTuple:
    """A role's tuple as written (the no-auditor ablation: no quality, no tightening)."""
    group = (normalize_group(c.group) if c.label else NON_HATE) if Track(track).has_group else None
    return SparTuple(target=output_target(c.target), argument=c.argument.strip(), label=c.label, group=group)
