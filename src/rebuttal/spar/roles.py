"""Phase 2: Victim, Moderator and Cultural Bystander propose tuples for each unit."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import ValidationError

from rebuttal.llm import ChatModel
from rebuttal.llm.base import extract_json
from rebuttal.llm.prompts import load_prompt
from rebuttal.spar.calls import Stage, call_objects
from rebuttal.spar.lexicon import Lexicon
from rebuttal.spar.schemas import role_schema
from rebuttal.spar.segmenter import PACKAGE, Unit
from rebuttal.spar.settings import SparSettings
from rebuttal.data.vocab import IMPLICIT_TARGET, Track
from rebuttal.spar.spans import as_data

LEXICON_HEADER = {
    "zh": "词典提示（弱提示，仅供参考，可能不适用）：",
    "en": "Lexicon hints (weak, may not apply):",
}


@dataclass
class Candidate:
    role: str
    group_id: str
    target: str
    argument: str
    label: int
    group: str | None = None
    rationale: str = ""
    repaired: bool = False
    quality: float = 0.0
    features: dict[str, float] = field(default_factory=dict)
    lexicon_hits: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"role": self.role, "target": self.target, "argument": self.argument, "label": self.label,
                "group": self.group, "rationale": self.rationale, "quality": round(self.quality, 4),
                "features": {k: round(v, 4) for k, v in self.features.items()},
                "lexicon_hits": self.lexicon_hits, "repaired": self.repaired}


def lexicon_hints(unit: Unit, lexicon: Lexicon | None, limit: int) -> list[str]:
    if lexicon is None:
        return []
    target = "" if unit.canonical_target == IMPLICIT_TARGET else unit.canonical_target
    return [e.term for e in lexicon.hits(unit.group_text, target, limit=limit)]


def role_prompts(kind: str, role: str, track: str, stage: Stage):
    """The track's `kind` template (role, review) and the role's persona, their versions noted."""
    template, persona = load_prompt(PACKAGE, f"{kind}.{track}"), load_prompt(PACKAGE, f"persona.{role}")
    stage.uses(template.version)
    stage.uses(persona.version)
    return template, persona


def slang_hints(role: str, track: str, lexicon: Lexicon | None, limit: int, *texts: str) -> list[str]:
    """The Cultural Bystander's lexicon lines for Chinese `texts` (none for the other roles)."""
    lang = Track(track).lang
    if role != "bystander" or lang != "zh" or lexicon is None:
        return []
    entries = lexicon.hits(*texts, limit=limit)
    if not entries:
        return []
    return [LEXICON_HEADER[lang], *(f"- {e.term}（{e.category}）：{e.definition[:80]}" for e in entries)]


def role_messages(unit: Unit, role: str, track: str, settings: SparSettings, lexicon: Lexicon | None,
                  stage: Stage, problem: str = "") -> list[dict]:
    template, persona = role_prompts("role", role, track, stage)
    target = "" if unit.canonical_target == IMPLICIT_TARGET else unit.canonical_target
    extra = slang_hints(role, track, lexicon, settings.max_lexicon_hints, unit.group_text, target)
    if problem:
        extra.append(f"Your previous answer had a problem: {problem}. Fix it; copy the argument exactly "
                     f"from inside <focus>.")
    hint = unit.canonical_target if unit.canonical_target != IMPLICIT_TARGET else f"{IMPLICIT_TARGET} (no explicit target)"
    content = template.render(
        focus=unit.prompt_focus(),
        hint=as_data(hint), persona=persona.template.strip(), extra="\n".join(extra),
        max_tuples=settings.max_tuples_per_role,
    )
    return [{"role": "user", "content": content}]


def _lenient(raw: str, track: str) -> list[dict]:
    """Salvage tuples from an answer that failed validation (a bare tuple, a bare list...)."""
    try:
        data = extract_json(raw)
    except ValueError:
        return []
    if isinstance(data, dict):
        data = data.get("tuples", [data])
    if not isinstance(data, list):
        return []
    item_schema = role_schema(track).model_fields["tuples"].annotation.__args__[0]
    kept = []
    for item in data:
        if not isinstance(item, dict):
            continue
        item = {"rationale": "", **item}
        try:
            kept.append(item_schema.model_validate(item).model_dump())
        except ValidationError:
            continue
    return kept


def run_roles(model: ChatModel, jobs: list[tuple[Unit, str, str]], track: str, settings: SparSettings,
              lexicon: Lexicon | None, stage: Stage) -> dict[tuple[str, str], list[Candidate] | None]:
    """Run (unit, role, problem) jobs in one batch. Value None = the role gave nothing usable."""
    conversations = [role_messages(u, r, track, settings, lexicon, stage, p) for u, r, p in jobs]
    labels = [f"{u.group_id}/{r}" for u, r, _ in jobs]
    answers = call_objects(model, conversations, role_schema(track), stage,
                           max_tokens=settings.max_tokens_role, labels=labels)
    out: dict[tuple[str, str], list[Candidate] | None] = {}
    for (unit, role, _), label, (value, raw) in zip(jobs, labels, answers):
        repaired = False
        if value is not None:
            rows = [t.model_dump() for t in value.tuples]
        else:
            rows = _lenient(raw, track)
            repaired = bool(rows)
            if rows:
                stage.note(f"{label}: repaired from invalid output")
            else:
                stage.flag(f"{label}: missing (no usable output)")
        hits = lexicon_hints(unit, lexicon, settings.max_lexicon_hints) if Track(track).lang == "zh" else []
        candidates = [
            Candidate(role=role, group_id=unit.group_id, target=str(r.get("target", "")),
                      argument=str(r.get("argument", "")), label=int(r.get("harmful", 0)),
                      group=r.get("group"), rationale=str(r.get("rationale", "")), repaired=repaired,
                      lexicon_hits=[h for h in hits if h in str(r.get("argument", "")) + str(r.get("target", ""))])
            for r in rows[: settings.max_tuples_per_role]
        ]
        out[(unit.group_id, role)] = candidates or None
    return out
