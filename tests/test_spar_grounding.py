"""SPAR's grounding promise: every output target (unless NULL) and argument is an exact
substring of the post, whatever the role agents invent; repairs and drops are flagged."""

import random

import pytest
from fakes import ScriptedChatModel

from rebuttal.spar import SparParser, SparSettings
from rebuttal.spar.auditor import Cluster, UnitAudit, audit_unit, score_clusters
from rebuttal.spar.roles import Candidate
from rebuttal.spar.segmenter import _make_units
from rebuttal.spar.spans import fuzzy_window, ground, ground_tuples, tighten
from rebuttal.types import SparTuple

POST = "@USER Keep them dumb, straight from the republican playbook. Have a nice day!"
ZH_POST = "有些郭楠在部分国女眼里早就被开除人籍了，只有黑皮白皮才是人上人"
INVENTED = ["they are evil", "democrats", "women", "Keep em dumb!!", "REPUBLICAN PLAYBOOK",
            "straight  from the", "nice dya", "<focus>Keep them dumb", "republicans", "", "NULL",
            "Have a nice day!", "dumb", "stupid people", "the playbook of republicans"]


def role_handler(rng: random.Random, pool: list[str]):
    def handler(messages, schema):
        title = schema["title"]
        if title == "Segmentation":
            return {"units": [{"local_group_id": 1, "group_text": POST.split(" Have")[0],
                               "canonical_target": "republican"},
                              {"local_group_id": 2, "group_text": "Have a nice day!",
                               "canonical_target": "IMPLICIT_TARGET"}]}
        if title.startswith("RoleOutput"):
            return {"tuples": [{"rationale": "r", "target": rng.choice(pool), "argument": rng.choice(pool),
                                "harmful": rng.randint(0, 1)} for _ in range(rng.randint(1, 3))]}
        if title == "ArbiterDecision":
            return {"chosen": 1, "argument": rng.choice(pool), "corrections": [], "rationale": "x"}
        raise AssertionError(title)

    return handler


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("settings", [{}, {"use_auditor": False}, {"use_segmenter": False}])
def test_output_spans_are_substrings_of_the_post(seed, settings):
    """Property over scripted candidates, many of them invented: the output is always grounded."""
    rng = random.Random(seed)
    parser = SparParser(ScriptedChatModel(handler=role_handler(rng, INVENTED)), SparSettings(**settings))
    result = parser.parse(POST, lang="en", id="p")
    assert result.status in ("ok", "flagged")
    for t in result.tuples:
        assert t.target == "NULL" or (t.target and t.target in POST), t
        assert t.argument and t.argument in POST, t
        assert "<focus>" not in t.argument and "<focus>" not in t.target


def test_invented_argument_and_target_are_dropped_and_flagged():
    """The reproduced defect: an argument and a target absent from the post came out `ok`, unflagged."""
    def handler(messages, schema):
        if schema["title"] == "Segmentation":
            return {"units": [{"local_group_id": 1, "group_text": POST, "canonical_target": "republican"}]}
        return {"tuples": [{"rationale": "r", "target": "democrats", "argument": "they are evil", "harmful": 1}]}

    result = SparParser(ScriptedChatModel(handler=handler)).parse(POST, lang="en", id="p")
    assert result.tuples == []
    assert result.status == "flagged"
    assert any("no usable candidate" in f for f in result.trace.flags)


def test_ungrounded_target_is_repaired_or_dropped_with_a_flag():
    def handler(messages, schema):
        if schema["title"] == "Segmentation":
            return {"units": [{"local_group_id": 1, "group_text": POST, "canonical_target": "republican"}]}
        return {"tuples": [{"rationale": "r", "target": "republicans", "argument": "Keep them dumb", "harmful": 1},
                           {"rationale": "r", "target": "the democrats", "argument": "nice day", "harmful": 0}]}

    result = SparParser(ScriptedChatModel(handler=handler)).parse(POST, lang="en", id="p")
    assert [(t.target, t.argument) for t in result.tuples] == [("republican", "Keep them dumb")]
    flags = "\n".join(result.trace.flags)
    assert "reassembly: grounding: repaired target 'republicans' -> 'republican' (fuzzy)" in flags
    assert "reassembly: grounding: dropped tuple: target 'the democrats' is not in the post" in flags


def test_zero_grounding_never_clears_the_quality_bar():
    unit = _make_units(POST, [(0, len(POST), "republican", "segmenter")], "p")[0]
    invented = Candidate(role="victim", group_id="p-g1", target="republican", argument="they are evil",
                         label=1, rationale="attacks the group")
    audit = UnitAudit(unit=unit, candidates=[invented], missing_roles=[])
    audit_unit(audit, POST, "en-main", ("victim",), SparSettings(roles=("victim",)))
    assert invented.features["grounding"] == 0.0
    assert invented.quality < SparSettings().quality_threshold
    assert audit.clusters == [] and audit.lane == "defective"


def test_cluster_floor_numbers_match_the_settings_comment():
    s = SparSettings()
    unit = _make_units(POST, [(0, len(POST), "republican", "segmenter")], "p")[0]
    def single(role):
        return Cluster(members=[Candidate(role=role, group_id="p-g1", target="republican", label=1,
                                          argument="Keep them dumb", rationale="attacks", quality=1.0)])

    moderator, victim = single("moderator"), single("victim")
    score_clusters([moderator, victim], unit, POST, s)
    assert moderator.score == pytest.approx(1.0 + s.lambda_roles + s.beacon_grounding) == pytest.approx(1.35)
    assert victim.score == pytest.approx(1.35 + s.beacon_microaggression) == pytest.approx(1.5)
    assert moderator.score > s.score_floor == 1.05
    two = Cluster(members=[Candidate(role=r, group_id="p-g1", target="x", argument="not here", label=0,
                                     quality=s.quality_threshold) for r in ("victim", "moderator")])
    score_clusters([two], unit, POST, s)
    assert two.score == pytest.approx(2 * 0.60 + 2 * s.lambda_roles) == pytest.approx(1.7)


def test_tighten_never_returns_text_absent_from_the_text():
    assert tighten("they are evil", POST) == ""
    assert tighten(" keep THEM dumb, ", POST) == "Keep them dumb"
    assert tighten("NULL", POST) == "NULL"
    rng = random.Random(0)
    for _ in range(200):
        a = rng.randrange(len(POST))
        probe = POST[a:a + rng.randint(1, 20)]
        noisy = "".join(ch.upper() if rng.random() < 0.2 else ch for ch in probe)
        out = tighten(noisy, POST)
        assert out in ("", "NULL") or out in POST  # NULL: a blank probe is the implicit marker


def test_ground_and_fuzzy_window_return_substrings_only():
    assert ground("Keep them dumb", POST) == ("Keep them dumb", "exact")
    assert ground("keep  them dumb", POST)[1] == "located"
    assert ground("the republican play book", POST)[0] in POST
    assert ground("completely unrelated words", POST) is None
    assert fuzzy_window("开除人籍", ZH_POST) == "开除人籍"
    assert fuzzy_window("郭男在部分国女眼里", ZH_POST) in ZH_POST
    kept, reasons = ground_tuples([SparTuple(target="NULL", argument="Have a nice day", label=0),
                                   SparTuple(target="x y z", argument="Have a nice day", label=0)], POST)
    assert [t.target for t in kept] == ["NULL"] and len(reasons) == 1


def test_fallbacks_are_trace_flags():
    """A unit with no candidate over the bar falls back to its best grounded one, flagged."""
    def handler(messages, schema):
        if schema["title"] == "Segmentation":
            return {"units": [{"local_group_id": 1, "group_text": POST.split(" Have")[0],
                               "canonical_target": "republican"}]}
        # Grounded only outside the unit, no target, an over-long rationale: q < 0.60.
        return {"tuples": [{"rationale": "word " * 60, "target": "NULL", "argument": "Have a nice day",
                            "harmful": 0}]}

    result = SparParser(ScriptedChatModel(handler=handler), SparSettings(regenerate=False)).parse(POST, lang="en",
                                                                                                    id="p")
    assert "auditor: p-g1: fallback to the best low-quality candidate" in result.trace.flags
    assert [(t.target, t.argument) for t in result.tuples] == [("NULL", "Have a nice day")]


class FixedTagger:
    """A trained tagger's parser, scripted: always the same tuples."""

    def __init__(self, tuples):
        self.tuples = tuples

    def parse(self, text, lang="en", track=None, id=None):
        from rebuttal.types import SparResult

        return SparResult(text=text, lang=lang, track=track or "en-main", system="spar-tagger", tuples=self.tuples)


def test_tagger_tuples_join_the_roles_as_a_fourth_role():
    """spar+tagger: the tagger's tuple is one more candidate; it clusters with the roles that agree
    with it, and carries the unit when every role invents its spans."""
    def handler_for(argument):
        def handler(messages, schema):
            if schema["title"] == "Segmentation":
                return {"units": [{"local_group_id": 1, "group_text": POST, "canonical_target": "republican"}]}
            return {"tuples": [{"rationale": "r", "target": "republican", "argument": argument, "harmful": 1}]}
        return handler

    tagger = FixedTagger([SparTuple(target="republican", argument="Keep them dumb", label=1)])
    parser = SparParser(ScriptedChatModel(handler=handler_for("Keep them dumb")), SparSettings(regenerate=False),
                        tagger=tagger)
    detail = parser.parse_detailed(POST, lang="en", id="p")
    assert parser.system == "spar+tagger" and detail.result.system == "spar+tagger"
    assert sorted(c.role for c in detail.audits[0].candidates) == ["bystander", "moderator", "tagger", "victim"]
    assert detail.audits[0].clusters[0].roles == {"bystander", "moderator", "tagger", "victim"}
    assert detail.result.status == "ok"
    assert any("tagger: 1 tuples" in n for s in detail.result.trace.steps for n in s.notes)

    invented = SparParser(ScriptedChatModel(handler=handler_for("they are evil")), SparSettings(regenerate=False),
                          tagger=tagger).parse(POST, lang="en", id="p")
    assert [(t.target, t.argument) for t in invented.tuples] == [("republican", "Keep them dumb")]
    alone = SparParser(ScriptedChatModel(handler=handler_for("they are evil")), SparSettings(regenerate=False))
    assert alone.parse(POST, lang="en", id="p").tuples == []
