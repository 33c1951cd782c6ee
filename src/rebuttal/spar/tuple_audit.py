"""`spar-tagger+audit`: the trained tagger's tuples, reviewed by the role agents and kept,
relabelled or dropped by a deterministic auditor, with the reasons in `SparResult.reviews`.

The spans come from the tagger; nothing is re-extracted. The roles may name a tuple the tagger
missed: it is added only when its argument (and target, unless NULL) is an exact substring of
the post, overlaps no kept tuple, and `audit_min_votes` roles named the same argument. A
decision needs `audit_min_votes` votes and a majority of the roles that answered; a tuple no
role gave a verdict on is kept as the tagger wrote it.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from rebuttal.spar.calls import Stage
from rebuttal.spar.pipeline import ParseDetail, SparParser
from rebuttal.spar.review import role_views, run_reviews
from rebuttal.spar.settings import SparSettings
from rebuttal.spar.spans import ground_tuples, output_target
from rebuttal.data.vocab import NON_HATE, OUTPUT_IMPLICIT, Track, group_valid, normalize_group
from rebuttal.types import RoleView, SparTuple, TupleReview

SYSTEM = "spar-tagger+audit"


def _needed(answered: int, s: SparSettings) -> int:
    return max(s.audit_min_votes, answered // 2 + 1)


def _hate_group(groups: list[str | None]) -> str:
    """The most common valid hate group named, else `others`."""
    named = Counter(normalize_group(g) for g in groups if g and group_valid(g) and normalize_group(g) != NON_HATE)
    return named.most_common(1)[0][0] if named else "others"


def _names(views: list[RoleView]) -> str:
    return ", ".join(v.role for v in views)


def _regroup(t: SparTuple, holding: list[RoleView], need: int) -> str | None:
    """Four-field tracks: a hate group other than the tagger's that enough holding roles name."""
    groups = Counter(normalize_group(v.group) for v in holding if v.label == 1 and v.group and group_valid(v.group)
                     and normalize_group(v.group) != NON_HATE)
    if not groups:
        return None
    group, votes = groups.most_common(1)[0]
    return group if votes >= need and group != normalize_group(t.group) else None


def decide(t: SparTuple, views: list[RoleView], track: str, s: SparSettings) -> TupleReview:
    """Keep, relabel or drop one tagger tuple by the roles' votes."""
    answered = [v for v in views if v.holds is not None]
    if not answered:
        return TupleReview(proposed=t, views=views, decision="kept", final=t,
                           reason="no role gave a verdict; the tagger's tuple is kept unaudited")
    need = _needed(len(answered), s)
    against = [v for v in answered if not v.holds]
    if len(against) >= need:
        return TupleReview(proposed=t, views=views, decision="dropped", reason=(
            f"{len(against)} of {len(answered)} roles say it does not hold ({_names(against)})"))
    holding = [v for v in answered if v.holds]
    flip = [v for v in holding if v.label is not None and v.label != t.label]
    quad = Track(track).has_group
    if len(flip) >= need:
        label = 1 - t.label
        group = (_hate_group([v.group for v in flip]) if label else NON_HATE) if quad else None
        return TupleReview(proposed=t, views=views, decision="relabelled",
                           final=t.model_copy(update={"label": label, "group": group}),
                           reason=f"{len(flip)} of {len(answered)} roles label it "
                                  f"{'hateful' if label else 'not hateful'} ({_names(flip)})")
    group = _regroup(t, holding, need) if quad and t.label == 1 else None
    if group is not None:
        return TupleReview(proposed=t, views=views, decision="relabelled", final=t.model_copy(update={"group": group}),
                           reason=f"roles that hold it name the group {group}, not {t.group}")
    return TupleReview(proposed=t, views=views, decision="kept", final=t, reason=(
        f"{len(holding)} of {len(answered)} roles say it holds; {len(against)} against, "
        f"{len(flip)} for the other label (a change needs {need})"))


def _overlaps(argument: str, kept: list[SparTuple]) -> bool:
    return any(argument in k.argument or k.argument in argument for k in kept)


def _proposals(reviews: dict[str, BaseModel | None], post: str, kept: list[SparTuple],
               stage: Stage) -> dict[str, list[tuple[str, BaseModel]]]:
    """The roles' missed tuples whose spans are exact substrings and new, by argument."""
    found: dict[str, list[tuple[str, BaseModel]]] = {}
    for role, review in reviews.items():
        for m in review.missed if review is not None else []:
            argument, target = m.argument.strip(), output_target(m.target)
            if not argument or argument not in post or (target != OUTPUT_IMPLICIT and target not in post):
                stage.note(f"{role}: missed tuple {argument[:40]!r} not taken: not an exact substring of the post")
            elif not _overlaps(argument, kept) and role not in {r for r, _ in found.get(argument, [])}:
                found.setdefault(argument, []).append((role, m))
    return found


def additions(reviews: dict[str, BaseModel | None], post: str, kept: list[SparTuple], track: str,
              s: SparSettings, stage: Stage) -> list[TupleReview]:
    """Tuples enough roles name as missed, spans exactly as in the post."""
    added: list[TupleReview] = []
    for argument, items in _proposals(reviews, post, kept, stage).items():
        if len(items) < s.audit_min_votes or len(added) >= s.audit_max_added:
            continue
        if _overlaps(argument, [r.final for r in added]):
            continue
        labels = Counter(m.harmful for _, m in items)
        label = 1 if labels[1] >= labels[0] else 0
        target = Counter(output_target(m.target) for _, m in items).most_common(1)[0][0]
        group = None
        if Track(track).has_group:
            group = _hate_group([getattr(m, "group", None) for _, m in items if m.harmful]) if label else NON_HATE
        t = SparTuple(target=target, argument=argument, label=label, group=group)
        views = [RoleView(role=role, holds=True, label=m.harmful, group=getattr(m, "group", None),
                          why=m.rationale.strip()) for role, m in items]
        added.append(TupleReview(source="roles", proposed=t, views=views, decision="added", final=t,
                                 reason=f"{len(items)} roles name it as missed ({_names(views)}); "
                                        "its spans are exact substrings of the post"))
    return added


class AuditedTaggerParser(SparParser):
    """`AuditedTaggerParser(model, settings, tagger=TaggerParser())`: the tagger parses, the
    roles review its tuples, the auditor decides. `parse` / `parse_detailed` as SparParser."""

    def __init__(self, model, settings: SparSettings | None = None, *, lexicon=None, tagger=None):
        if settings is not None and settings.zero_shot:
            raise ValueError("spar-tagger+audit reviews the tagger's tuples; zero_shot does not apply")
        if tagger is None:
            from rebuttal.spar.tagger.parser import TaggerParser

            tagger = TaggerParser()
        super().__init__(model, settings, lexicon=lexicon, tagger=tagger)

    @property
    def system(self) -> str:
        return SYSTEM

    def _run_spar(self, post: str, post_id: str, track: str, stages: list[Stage], detail: ParseDetail) -> None:
        s, result = self.settings, detail.result
        tagging = Stage("tagger")
        stages.append(tagging)
        tagged = self.tagger.parse(post, lang=Track(track).lang, track=track, id=post_id)
        for step in tagged.trace.steps[:1]:
            tagging.model = step.model
        for flag in tagged.trace.flags:
            if flag != "no tuple recovered":
                tagging.flag(flag)
        result.tuples = list(tagged.tuples)  # what stays if the model fails below
        tagging.note(f"{len(tagged.tuples)} tuples")
        if not tagged.tuples:
            tagging.note("nothing to review")
            return
        review = Stage("review")
        stages.append(review)
        lexicon = self.lexicon if Track(track).lang == "zh" else None
        answers = run_reviews(self.model, post, tagged.tuples, track, s, lexicon, review)
        audit = Stage("auditor")
        stages.append(audit)
        reviews = [decide(t, views, track, s) for t, views in zip(tagged.tuples, role_views(answers, len(tagged.tuples)))]
        kept = [r.final for r in reviews if r.final is not None]
        reviews += additions(answers, post, kept, track, s, audit)
        for number, r in enumerate(reviews, 1):
            audit.note(f"{number} ({r.source}): {r.decision}: {r.reason}")
        final = list({(t.target, t.argument, t.label, t.group): t for r in reviews
                      if (t := r.final) is not None}.values())  # exact duplicates once, in order
        grounded, reasons = ground_tuples(final, post)  # spans are the post's already: a cheap guarantee
        for reason in reasons:
            audit.flag(f"grounding: {reason}")
        if not grounded:
            audit.flag("every tagger tuple was dropped")
        result.reviews, result.tuples = reviews, grounded
