"""Draft checks: small pure functions, one per defect seen in the 1.5B model's drafts.

Each returns a `Problem` (what is wrong, said so the model can fix it) or None. `check_draft`
runs them all and returns one `CheckResult` per check for the trace, so a reviewer sees which
checks ran and how each went. Relevance needs sentence vectors; the caller computes them (see
`DraftJudge` in generator.py) so the checks stay pure and testable without a model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from rebuttal.fire.coherence import (
    SENTENCE, Problem, concession_problem, contradiction_problem, longest_run, meta_problem, othering_problem,
    overclaim_problem, slur_problem, words,
)
from rebuttal.fire.form import repetition_problem, script_problem, truncation_problem
from rebuttal.fire.injection import injection_problem
from rebuttal.fire.sourcing import CITATION, NUMBER, cited_numbers, label_problem, source_problem
from rebuttal.learned.text import language
from rebuttal.types import CheckResult, EvidenceItem

RESTATE_MIN_WORDS = 5  # a shared run this long copies the claim rather than referring to it

# Set by hand, not tuned: the 1.5B's off-topic replies we read sat well below it. In the silver
# dev run it failed 1 of 84 FIRE replies (benchmarks/results/fire.md).
MIN_POST_SIMILARITY = 0.25
# MiniLM cosine from which a shown text counts as the post itself reworded (the silver memory holds
# such copies of dev posts at 0.94-0.99); set by hand, not tuned.
SAME_POST = 0.9


# ------------------------------------------------------------------ evidence and the claim

def citation_problem(text: str, evidence: Sequence[EvidenceItem]) -> Problem | None:
    unknown = [n for n in cited_numbers(text) if not 1 <= n <= len(evidence)]
    if not unknown:
        return None
    advice = f"cite only [1] to [{len(evidence)}]" if evidence else "cite no sources"
    return Problem("citations", f"it cites {', '.join(f'[{n}]' for n in unknown)}, which is not among the evidence; {advice}")


def number_problem(text: str, post: str, evidence: Sequence[EvidenceItem]) -> Problem | None:
    """Numbers (years, statistics) that neither the evidence nor the post contains: a small
    model's way of citing a source it only remembers."""
    known = set(NUMBER.findall(post))
    for item in evidence:
        known.update(NUMBER.findall(" ".join(filter(None, (item.text, item.source, item.date)))))
    numbers = sorted({n for n in NUMBER.findall(CITATION.sub(" ", text)) if n not in known})
    if not numbers:
        return None
    return Problem("numbers", f"it states {', '.join(numbers)}, which no retrieved evidence contains; "
                              "use only the numbered evidence")


# Words just before a copied run that show the reply reports the claim rather than asserts it.
REPORTING = {"claim", "claims", "claiming", "idea", "notion", "myth", "belief", "say", "says", "saying",
             "said", "suggest", "suggests", "suggesting", "assert", "asserts", "argue", "argues",
             "false", "wrong", "true", "untrue", "incorrect", "statement",
             "if", "whether", "proof", "evidence"}  # a hypothesis or a question about the claim
NEGATION = {"not", "no", "never", "isn", "aren", "don", "doesn", "t"}
# A negation distances a short copy ("they are not lazy") but not a long one: "Women are not weak
# and bring our society down to their emotionally soft level" recites the post (silver dev).
NEGATED_COPY_MAX_WORDS = 7


def restated_run(reply: str, post: str) -> str | None:
    """The longest run of words the reply copies from the post, if long enough to restate the
    claim and not framed as a report of it ("the claim that ...", a negation, quotation marks)."""
    post_words, reply_words = words(post), words(reply)
    if not post_words or not reply_words:
        return None
    match = longest_run(post_words, reply_words)
    needed = min(RESTATE_MIN_WORDS, max(4, int(0.8 * len(post_words))))  # short posts: most of it
    if match.size < needed:
        return None
    copied = " ".join(post_words[match.a : match.a + match.size])
    # A negation inside the copy is part of the claim ("lazy and don't work"), and a negation
    # before it does not undo it: "they are not lazy and don't work" still says they don't (silver dev).
    own_negation = bool(set(copied.split()) & NEGATION)
    if len(content_words(copied)) + own_negation < 3:  # "the feminist movement is a": the topic, not the claim
        return None
    before = set(reply_words[max(0, match.b - 4) : match.b])  # "the notion that ...", "it is false that ..."
    negation_distances = match.size <= NEGATED_COPY_MAX_WORDS and not own_negation
    distancing = REPORTING | (NEGATION if negation_distances else set())
    if before & distancing or any(copied in " ".join(words(q)) for q in re.findall(r'["“«„](.+?)["”»“]', reply)):
        return None
    return copied


GRANTED = re.compile(r"\b(?:(?:it\s+is|it's|is\s+it)\s+(?:indeed\s+)?(?:true|a\s+fact)\s+that|while|although|though)\s+([^.;!?,]{8,200})",
                     re.IGNORECASE)
REPORTED = re.compile(r"\b(?:some|many|people|they|others)\s+(?:may\s+|might\s+)?(?:argue|claim|say|think|believe|feel)\b",
                      re.IGNORECASE)


def granted_claim(text: str, post: str) -> str | None:
    """"It is true that X" or "While X, ..." where X is mostly the post's own content: the reply
    affirms the claim it should rebut (seen: "While physical characteristics can be inherited,
    ..." against a post on malevolence "inherited through blood"). A reported view ("while some
    may argue that ...") is not granted."""
    post_words = content_words(post)
    for clause in GRANTED.findall(text):
        said = content_words(clause)
        shared = said & post_words
        if len(shared) >= 2 and len(shared) / len(said) >= 0.6 and not REPORTED.search(clause):
            return clause.strip()
    return None


MIRROR_MIN_WORDS = 4  # content words a post sentence needs before a reply sentence can mirror it
MIRROR_SHARE = 0.8


def mirrored_claim(text: str, post: str) -> str | None:
    """A reply sentence made of the post sentence's own content words with the same polarity,
    not framed as a report: the claim reshuffled, not answered (silver dev: "The US Government
    cares more about veterans than migrants" against "... cares more about migrants than our
    veterans")."""
    claims = [(content_words(s), bool(set(words(s)) & NEGATION)) for s in SENTENCE.findall(post)]
    for sentence in SENTENCE.findall(text):
        said, plain = content_words(sentence), set(words(sentence))
        if plain & REPORTING or sentence.rstrip().endswith("?"):  # a report or a question
            continue
        negated = bool(plain & NEGATION)
        for claim, claim_negated in claims:
            if (len(claim) >= MIRROR_MIN_WORDS and negated == claim_negated and len(said) <= len(claim) + 2
                    and len(said & claim) >= MIRROR_SHARE * len(claim)):
                return sentence.strip()
    return None


def restatement_problem(text: str, post: str) -> Problem | None:
    granted = granted_claim(text, post)
    if granted:
        return Problem("restatement", f'it grants the post\'s claim as true ("{granted[:80]}"); never affirm it')
    mirrored = mirrored_claim(text, post)
    if mirrored:
        return Problem("restatement", f'it says what the post says in other words ("{mirrored[:80]}"); answer it instead')
    copied = restated_run(text, post)
    if not copied:
        return None
    return Problem("restatement", f'it repeats the post\'s words "{copied}"; refer to the claim without restating it')


# ------------------------------------------------------------------ faithfulness and relevance

ATTRIBUTION = re.compile(  # at the start of a clause: "You say that ...", "The post also claims ..."
    r"(?:^|[.!?;:]\s+|,\s*|\bbut\s+)(?:(?:the\s+post|you|your\s+(?:post|comment|claim|statement))\s+(?:also\s+)?"
    r"(?:claims?|claimed|says?|said|states?|stated|suggests?|suggested|implies|implied|argues?|argued)"
    r"|(?:the\s+post|it|you|your\s+(?:post|comment))\s+(?:also\s+)?makes?\s+(?:a\s+|the\s+)?(?:false\s+)?"
    r"claims?(?:\s+about)?)\s+(?:that\s+)?([^.;!?]{8,200})",
    re.IGNORECASE,
)
STOPWORDS = set("""a an the and or but if of to in on at by for with from as is are was were be been being it
its this that these those they them their there here you your we our i me my he she his her him not no
do does did have has had will would can could should may might must all any some more most such than
so very just also about into over only own same too what which who whom why how when where up out""".split())


def content_words(text: str) -> set[str]:
    return {w.rstrip("s") for w in words(text) if w not in STOPWORDS and len(w) > 2}


# A reply that adds almost nothing of its own ("Disabled people are not lazy. They are capable and
# productive.") denies the post without a reason or an example: graders on silver dev marked all
# three such kept drafts not usable. 6.8% of 8,492 human replies are this thin, mostly one-line
# denials that the rubric's category_fit also asks to back up.
MIN_OWN_WORDS = 4


def substance_problem(text: str, post: str) -> Problem | None:
    if language(text) != "en":  # content words are English words; Chinese has no word boundaries here
        return None
    own = content_words(text) - content_words(post)
    if len(own) >= MIN_OWN_WORDS:
        return None
    return Problem("substance", "it only denies the post in the post's own words; give a reason, a fact "
                                "from the evidence or a concrete counter-example")


INVENTED_SOURCE = re.compile(r"\b(?:evidence|facts?|sources?|data|studies|survey)\s+(?:provided|given|cited|shown|mentioned)"
                             r"\s+(?:in|by)\s+(?:the|your)\s+(?:post|comment)\b", re.IGNORECASE)


def attribution_problem(text: str, post: str) -> Problem | None:
    """"You say that X" where X shares too little with the post: a claim the post never made;
    or evidence "provided in the post", which only the prompt provided."""
    if INVENTED_SOURCE.search(text):
        return Problem("faithfulness", "it credits the post with evidence it does not contain; the evidence "
                                       "is yours to cite, the post gave none")
    post_words = content_words(post)
    for claim in ATTRIBUTION.findall(text):
        said = content_words(claim)
        if len(said) >= 2 and len(said & post_words) / len(said) < 0.34:
            return Problem("faithfulness", f'it says the post claims "{claim.strip()[:80]}", which the post '
                                           "does not say; answer only what the post says")
    return None


def relevance_problem(reply_vec: np.ndarray, post_vec: np.ndarray, others: np.ndarray,
                      min_similarity: float = MIN_POST_SIMILARITY) -> Problem | None:
    """Off-topic: the reply is not about its post, or closer to another text it was shown
    (an exemplar, an evidence item) than to the post. Vectors are L2-normalised. A text that is
    nearly the post itself (a reworded copy in the memory) is no rival: answering it answers the post."""
    to_post = float(reply_vec @ post_vec)
    others = others[others @ post_vec < SAME_POST]
    closest_other = float((others @ reply_vec).max()) if len(others) else -1.0
    if to_post >= min_similarity and to_post >= closest_other:
        return None
    return Problem("relevance", f"it does not answer this post (similarity {to_post:.2f}); "
                                "answer this post's claim about its target group")


# ------------------------------------------------------------------ all checks

CHECKS = ("citations", "numbers", "sources", "restatement", "contradiction", "concession", "overclaim", "othering",
          "slur", "meta", "injection", "repetition", "truncation", "script", "substance", "faithfulness", "relevance")


def check_draft(text: str, post: str, evidence: Sequence[EvidenceItem], *, stopped_at_limit: bool = False,
                relevance: Problem | None = None, relevance_ran: bool = True,
                instructions: str = "") -> list[CheckResult]:
    """Every check's outcome, in CHECKS order. Relevance is computed by the caller (it needs
    vectors); when it could not run it is left out rather than reported as passed."""
    found = {
        "citations": citation_problem(text, evidence),
        "numbers": number_problem(text, post, evidence),
        "sources": source_problem(text, post, evidence),
        "restatement": restatement_problem(text, post),
        "contradiction": contradiction_problem(text),
        "concession": concession_problem(text),
        "overclaim": overclaim_problem(text),
        "othering": othering_problem(text),
        "slur": slur_problem(text),
        "meta": meta_problem(text, instructions),
        "injection": injection_problem(text, post),
        "repetition": repetition_problem(text),
        "truncation": truncation_problem(text, stopped_at_limit),
        "script": script_problem(text, post),
        "substance": substance_problem(text, post),
        "faithfulness": attribution_problem(text, post) or label_problem(text, post),
        "relevance": relevance,
    }
    if not relevance_ran:
        del found["relevance"]
    return [CheckResult(name=name, passed=problem is None, detail=problem.message if problem else "")
            for name, problem in found.items()]


def failures(results: Sequence[CheckResult]) -> list[CheckResult]:
    return [r for r in results if not r.passed]
