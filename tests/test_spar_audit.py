"""spar-tagger+audit: the role agents review the tagger's tuples, the auditor keeps, relabels or
drops them (or adds an exact-substring tuple enough roles name), and the result says why. Also the
tagger as the default system of `rebuttal parse`, `rebuttal.parse` and `default_parser`."""

import json
import random
import re

import pytest
from fakes import ScriptedChatModel
from typer.testing import CliRunner

from rebuttal.llm import LLMError
from rebuttal.spar import DEFAULT_SYSTEM, SparParser, SparSettings, default_parser
from rebuttal.spar.tuple_audit import AuditedTaggerParser
from rebuttal.types import SparResult, SparTuple

POST = "@USER Keep them dumb, straight from the republican playbook. Have a nice day!"
ZH_POST = "有些郭楠在部分国女眼里早就被开除人籍了，只有黑皮白皮才是人上人"
TAGGED = [SparTuple(target="republican", argument="Keep them dumb", label=1),
          SparTuple(target="NULL", argument="Have a nice day", label=1),
          SparTuple(target="republican", argument="republican playbook", label=0)]


class FixedTagger:
    """A trained tagger's parser, scripted: always the same tuples."""

    def __init__(self, tuples):
        self.tuples = tuples
        self.calls = 0

    def parse(self, text, lang="en", track=None, id=None):
        self.calls += 1
        return SparResult(text=text, lang=lang, track=track or "en-main", system="spar-tagger", tuples=self.tuples)


def role_of(prompt):
    return re.search(r"Your role: ([A-Z ]+)\.", prompt).group(1).split()[-1].lower()


def review_handler(verdicts, missed=None):
    """`verdicts[role]`: (holds, harmful) per tuple number; `missed[role]`: missed tuples."""
    def handler(messages, schema):
        assert schema["title"].startswith("ReviewOutput"), schema["title"]
        role = role_of(messages[0]["content"])
        answer = verdicts.get(role, [])
        if isinstance(answer, str):
            return answer
        return {"verdicts": [{"number": n, "holds": holds, "harmful": harmful, "why": f"{role} on {n}", **extra}
                             for n, (holds, harmful, *rest) in enumerate(answer, 1)
                             for extra in [{"group": rest[0]} if rest else {}]],
                "missed": (missed or {}).get(role, [])}
    return handler


def audited(handler, tuples=TAGGED, **settings):
    model = ScriptedChatModel(handler=handler)
    return AuditedTaggerParser(model, SparSettings(**settings), tagger=FixedTagger(tuples)), model


def test_the_auditor_keeps_drops_and_relabels_and_says_why():
    verdicts = {"victim": [(True, 1), (False, 0), (True, 1)],
                "moderator": [(True, 1), (False, 0), (True, 1)],
                "bystander": [(True, 0), (True, 1), (True, 0)]}
    parser, model = audited(review_handler(verdicts))
    result = parser.parse(POST, lang="en", id="p")
    assert result.system == "spar-tagger+audit" and result.status == "ok"
    assert result.llm_calls == len(model.calls) == 3  # one review per role, every tuple in it
    assert [(t.argument, t.label) for t in result.tuples] == [("Keep them dumb", 1), ("republican playbook", 1)]
    assert "Have a nice day" not in [t.argument for t in result.tuples]  # dropped by the auditor
    kept, dropped, relabelled = result.reviews
    assert (kept.decision, dropped.decision, relabelled.decision) == ("kept", "dropped", "relabelled")
    assert dropped.final is None and "2 of 3 roles say it does not hold (victim, moderator)" == dropped.reason
    assert relabelled.proposed.label == 0 and relabelled.final.label == 1 and "hateful" in relabelled.reason
    for review in result.reviews:
        assert [v.role for v in review.views] == ["victim", "moderator", "bystander"]
        assert all(v.why and v.holds is not None and v.label in (0, 1) for v in review.views)
    assert [s.stage for s in result.trace.steps] == ["tagger", "review", "auditor"]
    assert result.trace.steps[1].prompt_version == ("review.en-main.v1,persona.victim.v1,persona.moderator.v1,"
                                                    "persona.bystander.v1")
    prompt = model.calls[0]["messages"][0]["content"]
    assert "1. target='republican', argument='Keep them dumb', harmful=1" in prompt
    for t in result.tuples:
        assert t.argument in POST and (t.target == "NULL" or t.target in POST)
    again = SparResult.model_validate_json(result.model_dump_json())  # typed, and survives JSON
    assert again.reviews[2].views[2].why == "bystander on 3"


def test_one_role_is_not_enough_and_silent_roles_keep_the_tagger_tuple():
    verdicts = {"victim": [(False, 0), (True, 0), (True, 1)], "moderator": "no JSON here", "bystander": "nor here"}
    result = audited(review_handler(verdicts))[0].parse(POST, lang="en", id="p")
    assert [r.decision for r in result.reviews] == ["kept"] * 3  # 1 vote against: a change needs 2
    assert [t.argument for t in result.tuples] == [t.argument for t in TAGGED]
    assert "review: moderator: no usable review" in result.trace.flags
    assert [v.holds for v in result.reviews[0].views] == [False, None, None]
    nobody = audited(review_handler({r: "no" for r in ("victim", "moderator", "bystander")}))[0]
    result = nobody.parse(POST, lang="en", id="p")
    assert [t.argument for t in result.tuples] == [t.argument for t in TAGGED]
    assert all("kept unaudited" in r.reason for r in result.reviews)


def test_a_missed_tuple_is_added_only_as_an_exact_substring_named_by_two_roles():
    holds = [(True, 1)] * 3
    missed = {"victim": [{"rationale": "mocks", "target": "@USER", "argument": "straight from the", "harmful": 1},
                         {"rationale": "invented", "target": "democrats", "argument": "they are evil", "harmful": 1}],
              "moderator": [{"rationale": "mocks too", "target": "@USER", "argument": "straight from the", "harmful": 0},
                            {"rationale": "invented", "target": "NULL", "argument": "they are evil", "harmful": 1}],
              "bystander": [{"rationale": "only me", "target": "NULL", "argument": "@USER", "harmful": 0},
                            {"rationale": "inside a kept one", "target": "NULL", "argument": "them dumb", "harmful": 1}]}
    parser, _ = audited(review_handler({r: holds for r in missed}, missed))
    result = parser.parse(POST, lang="en", id="p")
    added = [r for r in result.reviews if r.decision == "added"]
    assert len(added) == 1 and added[0].source == "roles"
    assert (added[0].final.target, added[0].final.argument, added[0].final.label) == ("@USER", "straight from the", 1)
    assert [v.role for v in added[0].views] == ["victim", "moderator"] and added[0].views[0].why == "mocks"
    assert "they are evil" not in [t.argument for t in result.tuples]
    assert any("not an exact substring" in n for n in result.trace.steps[2].notes)
    assert len(result.tuples) == 4


def test_four_field_track_relabels_with_a_group():
    tagged = [SparTuple(target="郭楠", argument="早就被开除人籍了", label=0, group="non-hate"),
              SparTuple(target="黑皮白皮", argument="人上人", label=1, group="Racism")]
    verdicts = {r: [(True, 1, "Sexism"), (True, 1, "Region")] for r in ("victim", "moderator", "bystander")}
    parser, _ = audited(review_handler(verdicts), tuples=tagged)
    result = parser.parse(ZH_POST, lang="zh", track="zh-quad", id="z")
    assert [(t.label, t.group) for t in result.tuples] == [(1, "Sexism"), (1, "Region")]
    assert [r.decision for r in result.reviews] == ["relabelled", "relabelled"]
    assert "group" in result.reviews[1].reason


def test_no_tagger_tuple_means_no_call_and_a_model_failure_keeps_the_tagger_tuples():
    parser, model = audited(review_handler({}), tuples=[])
    result = parser.parse(POST, lang="en", id="p")
    assert result.status == "flagged" and result.llm_calls == 0 and not model.calls and not result.reviews

    def broken(messages, schema):
        raise LLMError("backend down")
    failing = audited(broken)[0].parse(POST, lang="en", id="p")
    assert failing.status == "error" and "backend down" in failing.message
    assert [t.argument for t in failing.tuples] == [t.argument for t in TAGGED] and not failing.reviews


INVENTED = ["they are evil", "democrats", "Keep em dumb!!", "REPUBLICAN PLAYBOOK", "straight  from the",
            "nice dya", "<focus>Keep them dumb", "", "NULL", "Have a nice day!", "dumb", "the playbook"]


@pytest.mark.parametrize("seed", range(20))
def test_every_output_span_is_an_exact_substring(seed):
    rng = random.Random(seed)

    def handler(messages, schema):
        return {"verdicts": [{"number": n, "holds": rng.random() < 0.6, "harmful": rng.randint(0, 1), "why": "w"}
                             for n in range(1, rng.randint(1, 5))],
                "missed": [{"rationale": "r", "target": rng.choice(INVENTED), "argument": rng.choice(INVENTED),
                            "harmful": rng.randint(0, 1)} for _ in range(rng.randint(0, 3))]}
    result = audited(handler)[0].parse(POST, lang="en", id="p")
    assert result.status in ("ok", "flagged")
    for t in result.tuples:
        assert t.argument and t.argument in POST, t
        assert t.target == "NULL" or t.target in POST, t
    assert {r.decision for r in result.reviews} <= {"kept", "relabelled", "dropped", "added"}


def test_the_tagger_is_the_default_and_the_agents_stay_available_by_name(monkeypatch):
    import rebuttal
    from rebuttal.spar.tagger.parser import TaggerParser

    assert DEFAULT_SYSTEM == "spar-tagger"
    assert isinstance(default_parser(), TaggerParser)  # nothing loads until a post is parsed
    assert type(default_parser(system="spar")) is SparParser
    assert isinstance(default_parser(system="spar-tagger+audit"), AuditedTaggerParser)
    assert default_parser(system="spar+tagger").system == "spar+tagger"
    shared = ScriptedChatModel(replies=[])
    assert default_parser(system="spar-tagger+audit", model=shared).model is shared  # e.g. a service's one model
    assert default_parser(system="spar", model=lambda: shared).model is shared
    with pytest.raises(ValueError, match="agent systems"):
        default_parser(quality_threshold=0.5)
    import inspect
    assert inspect.signature(rebuttal.parse).parameters["system"].default == DEFAULT_SYSTEM


def test_parse_command_defaults_to_the_tagger_and_explains(monkeypatch):
    import typer

    from rebuttal.spar import commands, systems

    tagger = FixedTagger(TAGGED)
    monkeypatch.setattr(systems, "tagger_parser", lambda settings: tagger)
    model = ScriptedChatModel(handler=review_handler({"victim": [(True, 1), (False, 0), (True, 0)],
                                                      "moderator": [(True, 1), (False, 0), (True, 0)]}))
    monkeypatch.setattr(systems, "load_model", lambda settings: model)
    app = typer.Typer()
    app.command()(commands.parse_command)
    plain = CliRunner().invoke(app, [POST, "--lang", "en", "--json"])
    assert plain.exit_code == 0, plain.output
    assert json.loads(plain.output)["system"] == "spar-tagger" and not model.calls
    shown = CliRunner().invoke(app, [POST, "--lang", "en", "--explain"])
    assert shown.exit_code == 0, shown.output
    assert "spar-tagger+audit · en" in shown.output and "-> DROPPED" in shown.output
    assert "moderator: does not hold, not hateful: moderator on 2" in shown.output
    assert "bystander: no verdict" in shown.output and "auditor: 2 of 2 roles say it does not hold" in shown.output
    clash = CliRunner().invoke(app, [POST, "--system", "spar", "--explain"])
    assert clash.exit_code == 2 and "--explain" in clash.output
