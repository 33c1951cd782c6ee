"""Draft checks on drafts the embedded 1.5B model wrote (tests/data/bad_drafts.jsonl, from
silver dev runs and the issue's examples; the research posts they answered are paraphrased, the
data itself is never committed) and on good replies of the shipped bank that must pass."""

import json
from pathlib import Path

import numpy as np
import pytest

from rebuttal.memory.records import load_bank
from rebuttal.fire.checks import (
    attribution_problem, check_draft, contradiction_problem, failures, meta_problem, relevance_problem,
    repetition_problem, restated_run, script_problem, truncation_problem,
)
from rebuttal.types import EvidenceItem

BAD = [json.loads(line) for line in (Path(__file__).parent / "data" / "bad_drafts.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("case", BAD, ids=[f"{c['check']}-{i}" for i, c in enumerate(BAD)])
def test_each_bad_draft_fails_its_check(case):
    evidence = [EvidenceItem(id=f"e{i}", text=t, source="s") for i, t in enumerate(case.get("evidence", []))]
    failed = {r.name for r in failures(check_draft(case["draft"], case["post"], evidence, relevance_ran=False))}
    assert case["check"] in failed


def test_the_shipped_bank_replies_pass_every_text_check_but_numbers():
    """200 hand-written replies: none may trip a coherence, meta or faithfulness check."""
    failed = {}
    for record in load_bank():
        if not record.is_hateful:
            continue
        evidence = [EvidenceItem(id="e", text=record.evidence, source=record.evidence_source or "s")] if record.evidence else []
        for result in failures(check_draft(record.counterspeech, record.hate_speech, evidence, relevance_ran=False)):
            failed.setdefault(result.name, []).append(record.id)
    assert set(failed) <= {"numbers"}  # a few bank replies use well-known numbers beyond their evidence
    assert len(failed.get("numbers", [])) <= 5


def test_contradiction():
    assert contradiction_problem("The post is not hateful at all. It is simply a false claim about Jews.")
    assert contradiction_problem("This isn't hate speech, but you should reconsider.")
    assert contradiction_problem("You're right that pollution matters, but blaming Africans is wrong.") is None


def test_meta_talk():
    assert meta_problem("The author's tone is dismissive and unprofessional.")
    assert meta_problem("As an AI language model I cannot agree.")
    assert meta_problem("Women lead companies well; many studies show it.") is None


def test_slur_in_the_reply_own_voice_but_not_a_quote_or_a_mention():
    from rebuttal.fire.coherence import slur_problem

    assert "Faggots" in slur_problem("Faggots are people who deserve respect.").message
    assert slur_problem('Calling gay men "faggots" only shows contempt.') is None
    assert slur_problem("Please don't call them retarded; say people with intellectual disabilities.") is None
    assert slur_problem("Slut-shaming blames women for the crimes of others.") is None
    assert slur_problem("Gay men and Jewish families live here in peace.") is None
    assert slur_problem("Slurs such as faggot hurt real people.") is None
    # seen in a held-out draft: "use" before the word is no mention of it
    assert "beaner" in slur_problem("Homeowners who use beaner labor pay fair wages.").message


def test_repetition_and_truncation():
    loop = "Immigrants work hard. Immigrants work hard. Immigrants work hard."
    assert repetition_problem(loop)
    assert repetition_problem("You have the right to vote, and I have the right to disagree.") is None
    assert truncation_problem("Most immigrants pay taxes and contri")
    assert truncation_problem("Most immigrants pay taxes.") is None
    assert truncation_problem("Most immigrants pay taxes.", stopped_at_limit=True)


def test_script():
    assert script_problem("Immigrants contribute 很多 to the economy.", "Immigrants are a burden")
    assert script_problem("Immigrants contribute to the economy.", "Immigrants are a burden") is None
    assert script_problem("移民为经济做出了贡献。", "移民都是负担") is None


def test_faithfulness_catches_claims_the_post_never_made():
    post = "Jews control the media and the banks."
    assert attribution_problem("You also claim that wage stagnation is real and caused by robots.", post)
    assert attribution_problem("You say that Jews control the media, but ownership is public.", post) is None


def test_relevance_prefers_the_post_over_what_the_model_was_shown():
    post, other = np.array([1.0, 0.0]), np.array([[0.0, 1.0]])
    on_topic = np.array([0.9, 0.1]) / np.linalg.norm([0.9, 0.1])
    off_topic = np.array([0.2, 0.9]) / np.linalg.norm([0.2, 0.9])
    assert relevance_problem(on_topic, post, other) is None
    problem = relevance_problem(off_topic, post, other)
    assert problem is not None and problem.check == "relevance"
    assert relevance_problem(on_topic, post, np.zeros((0, 2))) is None


def test_relevance_ignores_a_reworded_copy_of_the_post():
    post = np.array([1.0, 0.0])
    copy = np.array([[0.95, np.sqrt(1 - 0.95**2)]])  # the same post, reworded, in the memory
    reply = copy[0] * 0.999 + post * 0.001
    reply /= np.linalg.norm(reply)
    assert reply @ copy[0] > reply @ post  # closer to the copy than to the post ...
    assert relevance_problem(reply, post, copy) is None  # ... and still about the post
    far = np.array([[0.5, np.sqrt(0.75)]])
    assert relevance_problem(far[0], post, far) is not None  # an unrelated exemplar stays a rival


def test_restatement_needs_a_long_unframed_copy():
    post = "Immigrants are flooding in and most of them end up as criminals living off benefits."
    assert restated_run("Most of them end up as criminals living off benefits, sadly.", post)
    assert restated_run("The claim that most of them end up as criminals living off benefits is false.", post) is None


def test_drafts_are_cut_to_three_complete_sentences():
    from rebuttal.fire.sentences import first_sentences, sentences

    text = 'The U.S. Census shows 5.2 percent. Dr. Smith agrees! "Yes." Then more. And more'
    assert sentences(text) == ["The U.S. Census shows 5.2 percent.", "Dr. Smith agrees!", '"Yes."', "Then more.", "And more"]
    assert first_sentences(text, stopped_at_limit=True) == ('The U.S. Census shows 5.2 percent. Dr. Smith agrees! "Yes."', False, 2)
    assert first_sentences("Plain reply. Second one.", False) == ("Plain reply. Second one.", False, 0)
    assert first_sentences("One sentence only and cut", True) == ("One sentence only and cut", True, 0)  # still flagged
    assert first_sentences("移民不是罪犯。他们努力工作！我们应该尊重他们。更多。", False) == ("移民不是罪犯。他们努力工作！我们应该尊重他们。", False, 1)


def test_a_reply_reciting_its_instructions_fails_meta():
    from rebuttal.fire.generator import instructions

    post = "All of them are misogynists."  # paraphrase of a silver dev post
    echo = "Muslims are people. Show how different the people in the group are from one another."
    result = {r.name: r for r in check_draft(echo, post, [], relevance_ran=False, instructions=instructions())}
    assert not result["meta"].passed and "copies its instructions" in result["meta"].detail
    fine = "Plenty of Muslim men campaign for women's rights, and many Muslim women lead their communities."
    assert all(r.passed for r in check_draft(fine, post, [], relevance_ran=False, instructions=instructions()))


def test_concession_and_overclaim():
    from rebuttal.fire.coherence import concession_problem, overclaim_problem

    assert concession_problem("While some Muslims may exhibit sexist behaviour, most do not.").check == "concession"
    assert concession_problem("Some of them do have bad habits, like anyone.")
    # Acknowledging that readers may disagree or feel uneasy is not granting the claim.
    assert concession_problem("While some may disagree, migrants pay more in taxes than they receive.") is None
    assert concession_problem("While some Muslims may face discrimination, banning them is unjust.") is None
    # Drafts from silver dev runs, graded fixable or harmful for what these phrases grant.
    for granted in ("It is not always true that Black people are inferior to others.",
                    "While it's true that some Muslims may be more sensitive to political issues, respect matters."):
        assert concession_problem(granted).check == "concession", granted
    assert concession_problem("It is not true that Black people are inferior; no evidence shows it.") is None
    assert meta_problem("As a Muslim, I believe in peace and respect for all.").check == "meta"
    assert meta_problem("As neighbours, we can disagree without contempt.") is None
    assert overclaim_problem("Jews have always been kind to everyone.").check == "overclaim"
    assert overclaim_problem("Hate is never the answer, and people are more than a label.") is None
    assert overclaim_problem("Islam is a religion that promotes peace and justice.").check == "overclaim"
    # Qualified: what most of them do, not what all of them are.
    assert overclaim_problem("The vast majority of Muslims are peaceful, like their neighbours.") is None
    assert overclaim_problem("Most migrants are law-abiding and work hard.") is None


def test_substance_needs_words_of_its_own():
    from rebuttal.fire.checks import substance_problem

    post = "Migrants are lazy and don't work."
    assert substance_problem("Migrants are not lazy. They work.", post).check == "substance"
    assert substance_problem("Most migrants work: in Britain their employment rate matches that of people born here.",
                             post) is None
    assert substance_problem("移民不懒。", "移民很懒。") is None  # no English words to count


def test_restatement_needs_the_claim_not_just_the_topic():
    from rebuttal.fire.checks import granted_claim

    post = "The feminist movement is a dangerous force in our country."
    assert restated_run("The feminist movement is a force for equality.", post) is None  # names the topic only
    assert restated_run("Yes, the feminist movement is a dangerous force in our country.", post)
    work = "Women should not be allowed to work."
    assert granted_claim("While women should not be allowed to work everywhere, most jobs suit them.", work)
    assert granted_claim("While some may argue that women should not work, teams gain from them.", work) is None


def test_othering_needs_the_group_set_apart_from_others():
    from rebuttal.fire.coherence import othering_problem

    assert othering_problem("Roma are a distinct ethnic group with customs unlike ours.").check == "othering"
    assert othering_problem("They are different from us, and that is why they are dangerous.")
    assert othering_problem("Migrants are no different from anyone else who wants a safe home.") is None
    assert othering_problem("Muslims are not different from other people in what they want.") is None
    assert othering_problem("Look how different Muslims are from one another.") is None  # the stereotype move
    assert othering_problem("Their aims are different from the ones you ascribe to them.") is None


def test_a_long_copy_is_a_restatement_even_when_negated_and_a_mirror_is_one_too():
    from rebuttal.fire.checks import mirrored_claim

    post = "They are lazy and they take advantage of our taxpayers' money and our hospitals."
    assert restated_run("Disabled people are not lazy.", post) is None  # a short negated copy answers it
    assert restated_run("They do not take advantage of our taxpayers' money and our hospitals.", post)
    swapped = "It's absurd that the Government cares more about migrants than our veterans!"
    assert mirrored_claim("The Government cares more about veterans than migrants.", swapped)
    assert mirrored_claim("Does the Government care more about veterans than migrants?", swapped) is None
    banned = "Gays shouldn't be allowed to love one another."
    assert mirrored_claim("Gay people should be allowed to love one another, like anyone.", banned) is None


def test_a_reason_that_only_repeats_its_claim_is_repetition():
    from rebuttal.fire.form import circular_reason

    assert circular_reason("They are not different from others because they are not different.")
    assert circular_reason("They are not lazy because they work hard.") is None
    assert circular_reason("Nobody should be hated because of it.") is None  # no content word given
    assert circular_reason("So drugs are sold to blacks because they are black?") is None  # rhetorical question


def test_a_label_the_post_used_may_be_named_but_not_one_it_never_used():
    from rebuttal.fire.sourcing import unsaid_label

    assert unsaid_label("They are not vermin; they are neighbours.", "Roma are thieves.") == "vermin"
    assert unsaid_label("You call them vermin, but they are neighbours.", "Roma are vermin.") is None
    assert unsaid_label("Homosexuality is not a disease.", "Why don't gays try to heal?") is None  # same family
    assert unsaid_label("New diseases emerge wherever people and animals meet.", "Chinese are filthy.") is None  # literal


def test_research_is_allowed_only_when_it_rests_on_the_evidence():
    from rebuttal.fire.sourcing import source_problem

    post = "Immigrants never learn English."
    claim = "Studies show most children of immigrants speak English well."
    evidence = [EvidenceItem(id="e", text="Census figures: 90 percent of the US-born children of immigrants "
                                           "speak English proficiently.", source="census")]
    assert source_problem(claim, post, []).check == "sources"
    assert source_problem(claim + " [1]", post, evidence) is None
    assert source_problem("The census data show that 90 percent of their children speak English.", post, evidence) is None
    assert source_problem("According to the APA, bilingual children do well.", post, evidence)  # not what [1] says
    assert source_problem("Their children speak English like everyone else.", post, []) is None


def test_not_all_the_same_is_no_concession():
    from rebuttal.fire.coherence import concession_problem

    assert concession_problem("Muslims are not all the same: they are millions of different people.") is None
    assert concession_problem("Immigrants are not always a burden.")


def test_meta_catches_a_label_for_the_post_not_the_words_alone():
    assert meta_problem("This statement is false. Women lead companies well.").check == "meta"
    assert meta_problem("That claim is simply untrue; many women already run companies.").check == "meta"
    assert meta_problem("That claim was tested publicly and withdrawn in 2015.") is None
    assert meta_problem("Many studies claim this, but women run companies well.") is None
    assert meta_problem("Nobody should have to read a statement like yours about their family.") is None


def test_agreeing_openers_and_granted_influence_fail_but_their_negations_pass():
    from rebuttal.fire.coherence import concession_problem

    assert contradiction_problem("Absolutely, they should be kept out.").check == "contradiction"
    assert contradiction_problem("Absolutely not: they have the same right to be here.") is None
    assert concession_problem("Jews hold enormous power over the media, but not all of it.").check == "concession"
    assert concession_problem("Jews do not have a disproportionate influence on the media.") is None
