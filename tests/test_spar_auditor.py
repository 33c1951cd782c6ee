import pytest

from rebuttal.spar.auditor import (
    UnitAudit, audit_unit, build_clusters, cluster_tuple, confidence, ranked, score_quality, select,
    tighten_argument,
)
from rebuttal.spar.reassembly import reassemble
from rebuttal.spar.roles import Candidate
from rebuttal.spar.segmenter import _make_units
from rebuttal.spar.settings import SparSettings
from rebuttal.data.vocab import IMPLICIT_TARGET
from rebuttal.types import SparTuple

POST = "@USER Keep them dumb, straight from the republican playbook. Have a nice day!"
ROLES = ("victim", "moderator", "bystander")


def unit(target="republican"):
    end = POST.index("Have") - 1
    return _make_units(POST, [(0, end, target, "segmenter")], "p")[0]


def cand(role, target, argument, label=1, group=None, rationale="attacks the group"):
    return Candidate(role=role, group_id="p-g1", target=target, argument=argument, label=label, group=group,
                     rationale=rationale)


def audited(candidates, missing=(), settings=None, track="en-main"):
    audit = UnitAudit(unit=unit(), candidates=candidates, missing_roles=list(missing))
    audit_unit(audit, POST, track, ROLES, settings or SparSettings())
    return audit


def test_quality_rewards_grounding_and_penalises_invented_evidence():
    s = SparSettings()
    grounded = cand("victim", "republican", "Keep them dumb")
    invented = cand("victim", "democrats", "they are evil")
    outside = cand("victim", "republican", "Have a nice day")
    assert score_quality(grounded, unit(), POST, "en-main", s) == pytest.approx(1.0)
    assert grounded.features["grounding"] == 1.0
    assert score_quality(invented, unit(), POST, "en-main", s) < s.quality_threshold
    score_quality(outside, unit(), POST, "en-main", s)
    assert outside.features["grounding"] == 0.4  # in the post but outside the focus


def test_consensus_lane_and_selection():
    audit = audited([cand("victim", "republican", "Keep them dumb"),
                     cand("moderator", "republican", "Keep them dumb,"),
                     cand("bystander", "republican", "straight from the republican playbook", 0)])
    assert audit.lane == "consensus"
    kept = select(audit, SparSettings())
    assert len(kept) == 1 and kept[0].roles == {"victim", "moderator"}
    t = cluster_tuple(kept[0], audit.unit, POST, "en-main")
    assert (t.target, t.argument, t.label) == ("republican", "Keep them dumb", 1)
    # the top cluster's share of the score mass: 2.6 / (2.6 + 1.35)
    assert [round(c.score, 4) for c in ranked(audit.clusters)] == [2.6, 1.35]
    assert confidence(audit.clusters) == round(2.6 / 3.95, 4)


def test_conflict_lane_when_no_cluster_leads():
    audit = audited([cand("victim", "republican", "Keep them dumb"),
                     cand("moderator", "@USER", "straight from the republican playbook", 0),
                     cand("bystander", "them", "dumb", 0)])
    assert len(audit.clusters) == 3
    assert audit.lane == "conflict"


def test_defective_lane_for_missing_role_or_no_grounded_candidate():
    assert audited([cand("victim", "republican", "Keep them dumb")], missing=("moderator", "bystander")).lane == "defective"
    audit = audited([cand(r, "x", "not in the post at all") for r in ROLES])
    assert audit.lane == "defective" and "no valid grounded candidate" in audit.defects
    assert audit.clusters == []


def test_supplemental_cluster_needs_two_roles_and_the_floor():
    two_attacks = [cand("victim", "republican", "Keep them dumb"), cand("moderator", "republican", "Keep them dumb"),
                   cand("victim", "@USER", "straight from the republican playbook"),
                   cand("bystander", "@USER", "straight from the republican playbook")]
    audit = audited(two_attacks)
    assert len(select(audit, SparSettings())) == 2
    assert len(select(audit, SparSettings(max_clusters=1))) == 1
    assert len(select(audit, SparSettings(score_floor=10.0))) == 1  # the top cluster is always kept
    lonely = audited(two_attacks[:3])
    assert len(select(lonely, SparSettings())) == 1  # one supporting role is not enough


def test_clustering_threshold_is_a_setting():
    cands = [cand("victim", "republican", "Keep them dumb"), cand("moderator", "republican", "Keep them dumb", 0)]
    for c in cands:
        score_quality(c, unit(), POST, "en-main", SparSettings())
    assert len(build_clusters(cands, "en-main", SparSettings())) == 1  # sim 0.75 ≥ 0.66
    assert len(build_clusters(cands, "en-main", SparSettings(cluster_similarity=0.8))) == 2


def test_span_tightening_prefers_shortest_grounded_member_inside():
    audit = audited([cand("victim", "republican", "Keep them dumb, straight"),
                     cand("moderator", "republican", "Keep them dumb"),
                     cand("bystander", "REPUBLICAN", "keep them dumb")])
    top = select(audit, SparSettings())[0]
    assert tighten_argument(top, audit.unit, audit.unit.group_text) == "Keep them dumb"
    t = cluster_tuple(top, audit.unit, POST, "en-main")
    assert t.target == "republican"  # exact casing from the post


def test_quad_track_coherence_feature_and_group_repair():
    s = SparSettings()
    incoherent = cand("victim", "republican", "Keep them dumb", 1, "non-hate")
    coherent = cand("moderator", "republican", "Keep them dumb", 1, "others")
    score_quality(incoherent, unit(), POST, "zh-quad", s)
    score_quality(coherent, unit(), POST, "zh-quad", s)
    assert incoherent.features["coherence"] == 0.0 and coherent.quality > incoherent.quality
    audit = audited([incoherent, coherent], missing=("bystander",), track="zh-quad")
    t = cluster_tuple(select(audit, s)[0], audit.unit, POST, "zh-quad")
    assert (t.label, t.group) == (1, "others")


def test_victim_only_harm_gets_the_microaggression_beacon():
    audit = audited([cand("victim", "republican", "Keep them dumb"),
                     cand("moderator", "republican", "Have a nice", 0),
                     cand("bystander", IMPLICIT_TARGET, "playbook", 0)])
    victim = next(c for c in audit.clusters if c.roles == {"victim"})
    assert "victim-microaggression" in victim.beacons
    assert "victim-microaggression" in audit.tags


def test_reassembly_concatenates_with_provenance_and_exact_dedup():
    a, b = SparTuple(target="x", argument="y", label=1), SparTuple(target="z", argument="w", label=0)
    merged = reassemble([("g1", [a, b]), ("g2", [a])])
    assert merged.tuples == [a, b] and merged.provenance == [["g1", "g2"], ["g1"]]
    assert merged.duplicates_removed == 1
    assert len(reassemble([("g1", [a]), ("g2", [a])], dedup=False).tuples) == 2
