"""Checks for what a draft brings in from outside the post and the evidence.

Read blind on silver dev, two kinds of draft kept status `ok` yet could not be posted:
- it denies a dehumanising label the post never used ("they are not vermin or objects" to a post
  that said neither): the reply puts the word into the post, and into the thread;
- it leans on research nobody retrieved ("studies show ...", "according to the APA ..."): the
  1.5B model invents studies and institutions, and a moderator cannot check them.

Both are small pure functions returning a `Problem` or None, run by `checks.check_draft`. How a
reply uses the evidence (citations, numbers, retold words) is read here too, by those checks and
by the generator's list of the evidence a reply drew on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rebuttal.fire.coherence import Problem, longest_run, words
from rebuttal.types import EvidenceItem

# Families of dehumanising labels. A reply may name a label of a family the post used ("you call
# them vermin; they are neighbours"); a label of a family the post never touched is the model's.
# `said` is what a reply must not add; `covered` is what counts as the post having used the family.
LABEL_FAMILIES = {
    "contamination": (
        r"vermin|rats|cockroach(?:es)?|roach(?:es)?|pests?|insects?|parasit\w*|leech(?:es)?|lice|maggots?"
        r"|diseases?|diseased|plagues?|germs?|filth|trash|garbage|scum",
        r"sick\w*|ill(?:ness)?|disorders?|mental\w*|infect\w*|dirt\w*|vir(?:al|us)|pollut\w*|rodents?|bugs?"
        r"|cure\w*|stink\w*|rot\w*|swarm\w*|breed\w*|infest\w*|clean\w*|exterminat\w*|cancer\w*|gangrene"
        r"|heal\w*|tumou?rs?|covid|corona\w*|ebola|aids|hiv|pandemic|spread\w*",
    ),
    "animal": (
        r"animals?|beasts?|apes?|monkeys?|savages?|sub-?humans?|barbarians?",
        r"dogs?|pigs?|swine|cattle|baboons?|gorillas?|bats?|zoo|jungle|breed\w*|monsters?|creatures?|wild"
        r"|not\s+(?:a\s+)?(?:person|people|humans?)",
    ),
    "object": (r"objects", r"objects?|things?|property|tools?|bombs?|ordnance|not\s+(?:a\s+)?(?:person|people|humans?)"),
}
# The label said of people ("they are not vermin", "treated as objects", "nor animals"), not a
# literal use ("where people and animals come into close contact").
PREDICATE = (r"\b(?:not|no|nor|as|like|are|is|were|be|being|aren't|isn't|than|to|into|mere|just|simply"
             r"|call\w*|treat\w*|see|seen|view\w*|label\w*|compar\w*|brand\w*)\s+(?:\w+\s+){0,2}?")
LABEL_IN_REPLY = {name: re.compile(rf"{PREDICATE}\b(?:{said})\b", re.IGNORECASE)
                  for name, (said, _) in LABEL_FAMILIES.items()}
LABEL_IN_POST = {name: re.compile(rf"\b(?:{said}|{covered})\b", re.IGNORECASE)
                 for name, (said, covered) in LABEL_FAMILIES.items()}


def unsaid_label(text: str, post: str) -> str | None:
    """A dehumanising label in the reply whose family the post never used."""
    for family, pattern in LABEL_IN_REPLY.items():
        found = pattern.search(text)
        if found and not LABEL_IN_POST[family].search(post):
            return found.group(0).split()[-1]
    return None


def label_problem(text: str, post: str) -> Problem | None:
    label = unsaid_label(text, post)
    if not label:
        return None
    return Problem("faithfulness", f'it says "{label}", a label the post never used; answer only what the post '
                                   "says and do not add dehumanising words")


SOURCE_CLAIM = re.compile(
    r"(?i:\b(?:stud(?:y|ies)|research(?:ers)?|scientists|experts|surveys?|polls?|statistics|reports?|data|census)\s+"
    r"(?:\w+\s+){0,3}?(?:show|shows|showed|shown|found|finds|find|suggests?|suggested|indicates?|indicated"
    r"|confirms?|confirmed|proves?|proved|proven|demonstrates?|demonstrated|reveals?|revealed)\b"
    r"|\b(?:a|one)\s+(?:recent\s+)?(?:study|report|survey|poll)\s+(?:by|from|of|in)\b)"
    r"|\b[Aa]ccording\s+to\s+(?:the\s+|a\s+|an\s+)?[A-Z]\w*"  # a named source, not "according to them"
)
CITATION = re.compile(r"\[(\d{1,2})\]")
NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
SHARED_TERMS = 3  # long words a reply shares with an evidence item (beyond the post's) when it retells it


def cited_numbers(text: str) -> list[int]:
    return sorted({int(n) for n in CITATION.findall(text)})


def attributed_evidence(text: str, evidence: Sequence[EvidenceItem], min_run: int = 4) -> list[int]:
    """Evidence numbers the reply draws on without citing: it repeats one of the item's numbers
    or a run of `min_run` of its words, so a reviewer still sees where each fact came from."""
    reply_words = words(text)
    reply_numbers = set(NUMBER.findall(CITATION.sub(" ", text)))
    used = []
    for number, item in enumerate(evidence, 1):
        shared = longest_run(words(item.text), reply_words)
        if shared.size >= min_run or reply_numbers & set(NUMBER.findall(item.text)):
            used.append(number)
    return used


def draws_on(text: str, post: str, evidence: Sequence[EvidenceItem]) -> bool:
    """The reply cites an evidence item, repeats one of its numbers or four of its words in a row
    (`attributed_evidence`), or retells it: three of its longer words that the post does not use."""
    if (evidence and CITATION.search(text)) or attributed_evidence(text, evidence):
        return True
    terms = {w for w in words(text) if len(w) >= 5} - set(words(post))
    return any(len(terms & set(words(item.text))) >= SHARED_TERMS for item in evidence)


def source_problem(text: str, post: str, evidence: Sequence[EvidenceItem]) -> Problem | None:
    """An appeal to studies, data or an institution in a reply that rests on none of the
    retrieved evidence: a source the model remembers, or invents. (A reply that does use the
    evidence may introduce it in its own words: "the census data show ...".)"""
    found = SOURCE_CLAIM.search(text)
    if not found or draws_on(text, post, evidence):
        return None
    advice = "cite only the numbered evidence" if evidence else "no evidence was retrieved: cite no research"
    return Problem("sources", f'it says "{found.group(0)}" but uses none of the evidence; {advice}, '
                              "or make the point without a source")
