"""The role agents as reviewers of a span tagger's tuples (`spar-tagger+audit`).

Each role (the same Victim, Moderator and Cultural Bystander personas as in SPAR) reads the
whole post and the tagger's numbered tuples and says, per tuple, whether it holds from its
perspective, its own label and why; it may name a tuple the tagger missed. It never rewrites a
tuple's spans. One call per role, batched (concurrent on HTTP backends). The prompts are
`prompts/review.<track>.v<N>.txt` beside this module; the personas are SPAR's.
"""

from __future__ import annotations

from pydantic import BaseModel

from rebuttal.llm import ChatModel
from rebuttal.spar.calls import Stage, call_objects
from rebuttal.spar.lexicon import Lexicon
from rebuttal.spar.roles import role_prompts, slang_hints
from rebuttal.spar.schemas import review_schema
from rebuttal.spar.settings import SparSettings
from rebuttal.spar.spans import as_data
from rebuttal.data.vocab import Track
from rebuttal.types import RoleView, SparTuple


def tuple_listing(tuples: list[SparTuple], track: str) -> str:
    """The tuples under review, numbered from 1, their spans neutralised as data."""
    lines = []
    for number, t in enumerate(tuples, 1):
        group = f", group={t.group}" if Track(track).has_group else ""
        lines.append(f"{number}. target={as_data(t.target)!r}, argument={as_data(t.argument)!r}, "
                     f"harmful={t.label}{group}")
    return "\n".join(lines)


def review_messages(post: str, tuples: list[SparTuple], role: str, track: str, settings: SparSettings,
                    lexicon: Lexicon | None, stage: Stage) -> list[dict]:
    template, persona = role_prompts("review", role, track, stage)
    extra = slang_hints(role, track, lexicon, settings.max_lexicon_hints, post)
    content = template.render(post=as_data(post), tuples=tuple_listing(tuples, track),
                              persona=persona.template.strip(), extra="\n".join(extra),
                              max_missed=settings.audit_max_added)
    return [{"role": "user", "content": content}]


def run_reviews(model: ChatModel, post: str, tuples: list[SparTuple], track: str, settings: SparSettings,
                lexicon: Lexicon | None, stage: Stage) -> dict[str, BaseModel | None]:
    """Each active role's review of `tuples`; None for a role whose answer stayed invalid."""
    roles = settings.roles
    conversations = [review_messages(post, tuples, r, track, settings, lexicon, stage) for r in roles]
    answers = call_objects(model, conversations, review_schema(track), stage,
                           max_tokens=settings.max_tokens_review, labels=list(roles))
    reviews: dict[str, BaseModel | None] = {}
    for role, (value, _raw) in zip(roles, answers):
        if value is None:
            stage.flag(f"{role}: no usable review")
        reviews[role] = value
    return reviews


def role_views(reviews: dict[str, BaseModel | None], count: int) -> list[list[RoleView]]:
    """Per tuple (in order), one view per role: its first verdict on that tuple's number, or a
    view without a verdict (holds None) when the role gave none."""
    views: list[list[RoleView]] = [[] for _ in range(count)]
    for role, review in reviews.items():
        verdicts = {}
        for v in review.verdicts if review is not None else []:
            verdicts.setdefault(v.number, v)
        for index in range(count):
            v = verdicts.get(index + 1)
            if v is None:
                why = "no usable review" if review is None else "no verdict on this tuple"
                views[index].append(RoleView(role=role, why=why))
            else:
                views[index].append(RoleView(role=role, holds=v.holds, label=v.harmful,
                                             group=getattr(v, "group", None) or None, why=v.why.strip()))
    return views
