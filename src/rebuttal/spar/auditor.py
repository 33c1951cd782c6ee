"""Phase 3 (deterministic part): candidate quality, clustering, lanes, beacons, selection,
span tightening. The LLM arbitration of conflicts lives in `arbiter.py`; whatever it says only
adjusts scores, the final choice is always this module's ranking."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rebuttal.spar.roles import Candidate
from rebuttal.spar.segmenter import Unit
from rebuttal.spar.settings import SparSettings
from rebuttal.spar.spans import in_quotation, is_implicit, locate, output_target, similarity, tighten
from rebuttal.data.vocab import IMPLICIT_TARGET, NON_HATE, OUTPUT_IMPLICIT, Track, group_valid, normalize_group
from rebuttal.types import SparTuple


@dataclass
class Cluster:
    members: list[Candidate]
    score: float = 0.0
    beacons: list[str] = field(default_factory=list)
    lexicon_bonus: float = 0.0
    arbiter_pick: bool = False
    tight_argument: str | None = None

    @property
    def roles(self) -> set[str]:
        return {m.role for m in self.members}

    @property
    def representative(self) -> Candidate:
        return max(self.members, key=lambda m: (m.quality, -len(m.argument)))

    def as_dict(self) -> dict:
        rep = self.representative
        return {"target": rep.target, "argument": rep.argument, "label": rep.label, "group": rep.group,
                "roles": sorted(self.roles), "size": len(self.members), "score": round(self.score, 4),
                "beacons": self.beacons, "arbiter_pick": self.arbiter_pick}


@dataclass
class UnitAudit:
    unit: Unit
    candidates: list[Candidate]
    missing_roles: list[str]
    lane: str = "defective"
    tags: list[str] = field(default_factory=list)
    defects: list[str] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    selected: list[Cluster] = field(default_factory=list)
    tuples: list[SparTuple] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    regenerated: list[str] = field(default_factory=list)
    arbiter: dict | None = None
    confidence: float = 0.0


def _grounding(c: Candidate, unit: Unit, post: str) -> float:
    where = locate(c.argument, unit.group_text)
    if where is not None:
        return 1.0 if where[2] == "exact" else 0.8
    return 0.4 if locate(c.argument, post) is not None else 0.0  # outside the focus / invented


def _target_anchor(c: Candidate, unit: Unit, post: str) -> float:
    if is_implicit(c.target):
        return 0.5  # legitimate, but less informative than an explicit mention
    if locate(c.target, unit.group_text) is not None:
        return 1.0
    return 0.7 if locate(c.target, post) is not None else 0.0


def _canonical_agreement(c: Candidate, unit: Unit) -> float:
    if unit.canonical_target == IMPLICIT_TARGET and not is_implicit(c.target):
        return 0.5  # the segmenter may simply have missed the subject
    return similarity(c.target, unit.canonical_target)


def score_quality(c: Candidate, unit: Unit, post: str, track: str, s: SparSettings) -> float:
    """q(c) = Σ α_j φ_j(c), normalised over the features active on this track."""
    words = len(c.rationale.split()) if " " in c.rationale.strip() else len(c.rationale) // 2
    structure = [bool(c.target.strip()), bool(c.argument.strip()), bool(c.rationale.strip()),
                 words <= s.max_rationale_words, not c.repaired]
    quad = Track(track).has_group
    phi = {
        "grounding": _grounding(c, unit, post),
        "target": _target_anchor(c, unit, post),
        "canonical": _canonical_agreement(c, unit),
        "structure": sum(structure) / len(structure),
        "label": float(c.label in (0, 1) and (not quad or group_valid(c.group))),
    }
    alpha = {"grounding": s.alpha_grounding, "target": s.alpha_target, "canonical": s.alpha_canonical,
             "structure": s.alpha_structure, "label": s.alpha_label}
    if quad:
        phi["coherence"] = float((c.label == 1) == (normalize_group(c.group) != NON_HATE))
        alpha["coherence"] = s.alpha_coherence
    c.features = phi
    c.quality = sum(alpha[k] * phi[k] for k in phi) / sum(alpha.values())
    if phi["grounding"] == 0.0:
        c.quality = 0.0  # an argument that is not in the post never clears the quality bar
    return c.quality


def pair_similarity(a: Candidate, b: Candidate, track: str, s: SparSettings) -> float:
    beta_g = s.beta_group if Track(track).has_group else 0.0
    total = s.beta_target + s.beta_argument + s.beta_label + beta_g
    value = (s.beta_target * similarity(a.target, b.target)
             + s.beta_argument * similarity(a.argument, b.argument)
             + s.beta_label * float(a.label == b.label)
             + beta_g * float(normalize_group(a.group) == normalize_group(b.group)))
    return value / total


def build_clusters(candidates: list[Candidate], track: str, s: SparSettings) -> list[Cluster]:
    """Greedy clustering, best candidates first: join the most similar cluster (mean similarity
    to its members) when it reaches the join threshold, else open a new one."""
    clusters: list[Cluster] = []
    for c in sorted(candidates, key=lambda c: -c.quality):
        best, best_sim = None, -1.0
        for cluster in clusters:
            sim = sum(pair_similarity(c, m, track, s) for m in cluster.members) / len(cluster.members)
            if sim > best_sim:
                best, best_sim = cluster, sim
        if best is not None and best_sim >= s.cluster_similarity:
            best.members.append(c)
        else:
            clusters.append(Cluster(members=[c]))
    return clusters


def score_clusters(clusters: list[Cluster], unit: Unit, post: str, s: SparSettings,
                   penalties: dict[str, float] | None = None) -> None:
    """Score(C) = Σ q + λ1·|roles| + λ2·lexicon bonus, plus the soft beacons."""
    penalties = penalties or {}
    for cluster in clusters:
        rep = cluster.representative
        cluster.beacons = []
        cluster.lexicon_bonus = float(rep.label == 1 and any(m.lexicon_hits for m in cluster.members))
        score = sum(m.quality - penalties.get(m.role, 0.0) for m in cluster.members)
        score += s.lambda_roles * len(cluster.roles) + s.lambda_lexicon * cluster.lexicon_bonus
        if cluster.lexicon_bonus:
            cluster.beacons.append("lexicon-hit")
        where = locate(rep.argument, unit.group_text)
        if where is not None and where[2] == "exact":
            cluster.beacons.append("grounding")
            score += s.beacon_grounding
        anchor = locate(rep.argument, post)
        if rep.label == 1 and anchor is not None and in_quotation(post, anchor[0], anchor[1]):
            cluster.beacons.append("quotation")
            score -= s.beacon_quotation
        if rep.label == 1 and cluster.roles == {"victim"}:
            cluster.beacons.append("victim-microaggression")
            score += s.beacon_microaggression
        if cluster.arbiter_pick:
            score += s.arbiter_bonus
        cluster.score = score


def ranked(clusters: list[Cluster]) -> list[Cluster]:
    order = {id(c): i for i, c in enumerate(clusters)}
    return sorted(clusters, key=lambda c: (-c.score, -len(c.roles), len(c.representative.argument), order[id(c)]))


@dataclass(frozen=True)
class Triage:
    """Where a unit goes: `lane` consensus / defective / conflict, with beacon tags and defects."""

    lane: str
    tags: list[str]
    defects: list[str]


def triage(audit: UnitAudit, active_roles: tuple[str, ...], s: SparSettings) -> Triage:
    """consensus (clear top cluster, no defect) / defective / conflict, plus beacon tags."""
    valid_grounded = [c for c in audit.candidates if c.quality >= s.quality_threshold
                      and c.features.get("grounding", 0) >= 0.8]
    defects = [f"missing role: {r}" for r in audit.missing_roles]
    if not valid_grounded:
        defects.append("no valid grounded candidate")
    order = ranked(audit.clusters)
    tags = sorted({b for c in order[:2] for b in c.beacons if b in ("lexicon-hit", "victim-microaggression")})
    if defects:
        return Triage("defective", tags, defects)
    top = order[0]
    clear = len(order) == 1 or top.score - order[1].score >= s.consensus_margin
    lane = "consensus" if clear and len(top.roles) >= min(2, len(active_roles)) else "conflict"
    return Triage(lane, tags, defects)


def audit_unit(audit: UnitAudit, post: str, track: str, active_roles: tuple[str, ...], s: SparSettings) -> None:
    """Quality → clusters over candidates at or above the threshold → scores → lane."""
    for c in audit.candidates:
        score_quality(c, audit.unit, post, track, s)
    valid = [c for c in audit.candidates if c.quality >= s.quality_threshold]
    audit.clusters = build_clusters(valid, track, s)
    score_clusters(audit.clusters, audit.unit, post, s)
    routed = triage(audit, active_roles, s)
    audit.lane, audit.tags, audit.defects = routed.lane, routed.tags, routed.defects


def select(audit: UnitAudit, s: SparSettings) -> list[Cluster]:
    """The top cluster, plus at most max_clusters-1 supplemental ones that clear the score floor
    with enough supporting roles."""
    order = ranked(audit.clusters)
    if not order:
        return []
    kept = [order[0]]
    for cluster in order[1:]:
        if len(kept) >= s.max_clusters:
            break
        if cluster.score >= s.score_floor and len(cluster.roles) >= s.supplemental_min_roles:
            kept.append(cluster)
    return kept


def confidence(clusters: list[Cluster]) -> float:
    """The top cluster's share of the (non-negative) score mass."""
    order = ranked(clusters)
    total = sum(max(c.score, 0.0) for c in order)
    return round(order[0].score / total, 4) if order and total > 0 else 0.0


def tighten_argument(cluster: Cluster, unit: Unit, post: str) -> str:
    """Prefer the shortest grounded member (or arbiter) span inside the representative's argument."""
    rep = cluster.representative.argument.strip()
    options = [m.argument.strip() for m in cluster.members if m.features.get("grounding", 0) >= 0.8]
    if cluster.tight_argument:
        options.append(cluster.tight_argument.strip())
    inside = [o for o in options if len(o) >= 2 and o.lower() in rep.lower()]
    chosen = min(inside, key=len) if inside else rep
    # The unit's own text first, then the whole post (never the focus-marked copy of it).
    return tighten(chosen, unit.group_text) if locate(chosen, unit.group_text) else tighten(chosen, post)


def cluster_tuple(cluster: Cluster, unit: Unit, post: str, track: str) -> SparTuple:
    rep = cluster.representative
    weights: Counter[int] = Counter()
    for m in cluster.members:
        weights[m.label] += m.quality
    label = max(weights, key=lambda k: (weights[k], k == rep.label))
    target = output_target(rep.target)
    if target != OUTPUT_IMPLICIT:
        target = tighten(target, post) or target  # not in the post: `ground_tuples` repairs or drops it
    group = None
    if Track(track).has_group:
        group = normalize_group(rep.group)
        if label == 0:
            group = NON_HATE
        elif group == NON_HATE or not group_valid(group):
            groups = Counter(normalize_group(m.group) for m in cluster.members
                             if group_valid(m.group) and normalize_group(m.group) != NON_HATE)
            group = groups.most_common(1)[0][0] if groups else "others"
    argument = tighten_argument(cluster, unit, post) or rep.argument.strip() or unit.group_text
    return SparTuple(target=target, argument=argument, label=label, group=group)


def fallback_tuple(candidates: list[Candidate], unit: Unit, post: str, track: str) -> SparTuple | None:
    """No candidate cleared the threshold: the best one that has any grounding, if any."""
    usable = [c for c in candidates if c.features.get("grounding", 0) > 0 and c.argument.strip()]
    if not usable:
        return None
    best = max(usable, key=lambda c: c.quality)
    return cluster_tuple(Cluster(members=[best]), unit, post, track)
