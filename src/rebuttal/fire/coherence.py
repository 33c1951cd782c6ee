"""Coherence checks: does the draft read as a plain, whole disagreement with the post?

Small pure functions over the draft's text (see checks.py for how they are run and reported).
The patterns come from the 1.5B model's drafts on silver dev; fixtures, paraphrased, are in
tests/data/bad_drafts.jsonl.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from rebuttal.fire.slurs import slur_used
from rebuttal.types import Trace

WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Problem:
    check: str
    message: str  # addressed to the model: what to fix


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def longest_run(source: list[str], reply: list[str]):
    """The longest run of words `reply` shares with `source` (difflib Match: a, b, size)."""
    return SequenceMatcher(None, source, reply, autojunk=False).find_longest_match()


# Calls the post harmless: in a reply or in the analyst's reasoning behind a reply, it contradicts
# the decision to answer.
HATE_DENIAL = (r"\b(?:(?:is|was|are|it's)\s+not\s+(?:really\s+)?(?:hateful|hate\s*speech|offensive|harmful|discriminatory)"
               r"|(?:isn'?t|aren'?t|wasn'?t)\s+(?:really\s+)?(?:hateful|hate\s*speech|offensive|harmful|discriminatory)"
               r"|not\s+hateful\s+at\s+all|nothing\s+(?:hateful|offensive)\s+(?:about|in))")
CONTRADICTION = re.compile(
    r"\bnot\s+(?:inherently|necessarily|entirely|completely|simply|just\s+an?)\b"  # half-denials: "not inherently worse"
    r"|\bI\s+(?:respect|accept|share|agree\s+with)\s+(?:the|your)\s+(?:claim|point|view|opinion|concern|perspective"
    r"|position|stance|sentiment|feelings?)"
    r"|\bI\s+understand\s+the\s+(?:(?:sentiment|feeling)\s+behind|frustration)\b|\bnot\s+everyone\s+is\s+created\s+equal\b"
    r"|^\W*(?:yes|absolutely)\b(?!\W+not\b)"  # "Yes, they should.", "Absolutely, men should ..." (silver dev)
    rf"|{HATE_DENIAL}"
    r"|^\W*(?:you\s+are|you're|that\s+is|that's)\s+(?:absolutely\s+)?(?:correct|right|true)\s*[.!]",
    re.IGNORECASE,
)
# The analyst's reasoning calling the post harmless or a neutral mention (seen on silver dev behind
# posts the gate called hateful: "It is not hateful at all, but rather a factual statement").
REASONING_DENIAL = re.compile(HATE_DENIAL + r"|\bneutral\s+(?:claim|statement|mention|description)\b", re.IGNORECASE)


def reasoning_denies_hate(reasoning: str) -> bool:
    return REASONING_DENIAL.search(reasoning) is not None


REASONING_FLAG = "analyst_reasoning_contradicts"


def flag_reasoning(reasoning: str, trace: Trace) -> None:
    """A reply that stands on reasoning calling the post harmless is flagged (FIRE and the
    baselines alike): the review page shows that reasoning beside the reply."""
    if reasoning_denies_hate(reasoning):
        trace.flag(REASONING_FLAG)


def _found(pattern: re.Pattern, text: str, check: str, advice: str) -> Problem | None:
    found = pattern.search(text)
    return Problem(check, f'it says "{found.group(0)}"; {advice}') if found else None


def contradiction_problem(text: str) -> Problem | None:
    """A rebuttal that calls the post harmless, respects its claim or only half-denies it
    contradicts the analysis it rests on. (Conceding a side point, "you're right that ...", is a
    normal move in human counter-speech and passes.)"""
    return _found(CONTRADICTION, text, "contradiction",
                  "disagree with the post plainly, without softening or judging it")


CONCESSION = re.compile(
    r"\b(?:while|although|though|even\s+if)\s+(?:it\s+(?:may|might|could)\s+(?:be\s+true|seem|sound|appear)"
    r"|there\s+(?:may|might)\s+be\s+some|they\s+(?:may|might|can|could)\b)"  # "while they may steal ..."
    r"|\bit\s+(?:may|might|could)\s+(?:well\s+)?be\s+true\b"
    # "some Jews may exhibit ...", "some individuals and groups may engage ...": grants the trait
    # to part of the group; "just as capable of committing these crimes": grants the crimes
    r"|\bsome\s+(?:of\s+them|\w+(?:\s+\w+)?(?:\s+and\s+\w+)?)\s+(?:may|might|do|can|could)\s+(?:not\s+)?"
    r"(?:exhibit|be\b|have\b|commit|engage|show|behave|display|hold\s+(?:negative|harmful|extreme))"
    r"|\bcapable\s+of\s+committing\b"
    r"|\bnot\s+the\s+(?:sole|only)\s+(?:cause|reason|factor)\b"
    r"|\bnot\s+all\s+(?:\w+\s+){1,3}?(?:are|do|have|were|engage|commit)\b"  # "not all forms of feminism are"
    # Seen on silver dev, graded harmful or fixable: "It is not always true that Black people are
    # inferior", "While it's true that some Muslims may be ...". ("I understand the concern" is not
    # here: on dev 2 of the 3 drafts that said it were graded usable.)
    r"|\bnot\s+(?:always|universally|necessarily|entirely)\s+(?:true|accurate|correct|the\s+case)\b"
    # "Islam is not all about hate", "flags are not appropriate for all students": only part of
    # the claim denied (silver dev: 4 drafts, none usable); "they are not all the same" is fine
    r"|\b(?:are|is)\s+not\s+(?:always|all)\b(?!\s+(?:the\s+same|alike)\b)|\bnot\s+(?:\w+\s+)?for\s+all\b"
    r"|\b(?:while|although|though)\s+it(?:'s|\s+is)\s+true\b"
    # "Jews have a significant influence on American culture, but ...": grants the conspiracy's
    # premise (silver dev, graded harmful; no human reply in silver train says it)
    r"|(?<!not\s)(?<!n't\s)(?<!never\s)\b(?:have|has|hold|wield)\s+(?:a\s+)?(?:significant|considerable|disproportionate"
    r"|outsized|enormous|huge|great|lot\s+of)\s+(?:amount\s+of\s+)?(?:influence|power|control)\b",
    re.IGNORECASE,
)


def concession_problem(text: str) -> Problem | None:
    """Grants part of the hateful claim ("while some Jews may exhibit ...", "not all of them are",
    "not the sole cause"): read blind, these drafts were never usable, and a pattern is the only
    check that sees them (they stay on topic and copy no words)."""
    return _found(CONCESSION, text, "concession",
                  "grant no part of the claim: say what is true of the people it targets")


# Plural "have": said of a group ("Muslims have always been ..."); "saying that has always been
# the first step ..." in a human reply is a different, fair use. "Without any form of": seen on
# silver dev ("Muslims have lived in Britain for centuries without experiencing any form of
# racial hate").
OVERCLAIM = re.compile(r"\bhave\s+(?:always|never)\s+(?:been|sought|done|committed|had|supported)\b"
                       r"|\balways\s+(?:acted|behaved|treated|shown|respected)\b"
                       # migrants do not hold citizens' rights (graded harmful on silver dev, 4 drafts)
                       r"|\bsame\s+(?:\w+\s+){0,3}(?:rights|protections|benefits)\s+(?:\w+\s+){0,3}as\s+(?:\w+\s+)?citizens\b"
                       r"|\bnever\s+been\s+involved\b"
                       r"|\bwithout\s+(?:\w+\s+){0,2}any\s+(?:form|kind|type|sort)\s+of\b", re.IGNORECASE)


# Unqualified praise of a whole group or faith, and ranking it above others: the reverse
# generalisation graders marked fixable on silver dev ("Muslims are a peaceful and respectful
# religion", "Islam has a rich history of peace", "more compassionate than many other groups").
# "The vast majority of Muslims are peaceful" is a fair, qualified claim and passes.
SWEEPING_PRAISE = re.compile(
    r"\b(?:is|are)\s+(?:an?\s+)?(?:\w+\s+and\s+)?(?:peaceful|peace-loving|law-abiding)\b"
    r"|\b(?:religion|faith)\s+that\s+(?:promotes|teaches|values|encourages)\s+peace\b"
    r"|\b(?:rich|long)\s+history\s+of\s+(?:peace|peaceful|non-?violence|tolerance|harmony)"
    r"|\bmore\s+(?:\w+\s+){1,4}than\s+(?:many\s+|most\s+)?other\s+(?:groups|people|religions|communities)\b",
    re.IGNORECASE)
QUALIFIER = re.compile(r"\b(?:most|majority|many|millions)\b", re.IGNORECASE)


def overclaim_problem(text: str) -> Problem | None:
    """A sweeping counter-claim ("Muslims have always been peaceful", "never been involved in
    terrorism", "Muslims are a peaceful religion") is false and easy to knock down; a moderator
    cannot post it."""
    found = _found(OVERCLAIM, text, "overclaim",
                   'make no sweeping claims with "always" or "never": say what is typical or known')
    if found:
        return found
    for sentence in SENTENCE.findall(text):
        praise = SWEEPING_PRAISE.search(sentence)
        if praise and not QUALIFIER.search(sentence[: praise.start()]):
            return Problem("overclaim", f'it says "{praise.group(0)}" of a whole group; give a concrete '
                                        "example or say what most of them do, not what all of them are")
    return None


# The reply calls the people it defends different from others: the post's premise granted (seen
# on silver dev: "Gypsies are a distinct group ... different from those of the majority", "Jews
# are ... different from humans in general"). "No different from" and "different from one
# another" (the stereotype move itself) are fine.
OTHERING = re.compile(
    r"(?<!\bno\s)(?<!\bnot\s)(?<!n't\s)(?<!\bso\s)(?<!much\s)\b(?:different|distinct|set\s+apart)\s+from\s+"
    r"(?:us\b|humans?\b|(?:the\s+)?(?:rest|majority)\b|others\b|other\s+(?:people|humans|groups)\b"
    r"|non-?\w+|everyone|ordinary|normal)"
    r"|\ba\s+distinct\s+(?:\w+\s+)?(?:group|people|race|species|community|population)\b"
    r"|\b(?:are|is)\s+(?:not|nothing)\s+like\s+(?:us|the\s+rest|other\s+people|anyone\s+else)\b"
    r"|\bmakes?\s+them\s+(?:different|distinct)\b"
    r"|\b(?:inferior|superior|equal|similar|compared)\s+to\s+humans\b|\bthan\s+humans\b|(?<!other\s)\bwith\s+humans\b",
    re.IGNORECASE,
)


def othering_problem(text: str) -> Problem | None:
    """Calls the targeted people different or distinct from others: the premise of a post like
    "they are not like us", granted in the reply's own voice."""
    return _found(OTHERING, text, "othering",
                  "do not call them different from others: say what they share with everyone")


def slur_problem(text: str) -> Problem | None:
    if slur := slur_used(text):
        return Problem("slur", f'it says "{slur}"; never use a slur or insult: name the people respectfully')
    return None


META = re.compile(
    r"^\W*(?:I\s+agree\b|I\s+appreciate\s+your|thank\s+you\s+for\s+your|I\s+understand\s+(?:that\s|your\s))"
    r"|\bthis\s+person\b|\bthe\s+person\s+who\s+(?:wrote|posted)\b|\btarget\s+group\b"
    r"|\b(?:the|this)\s+post\b|\bI\s+hope\s+this\s+helps\b|\bmy\s+stance\b"
    r"|\b(?:is|isn't|not)\s+(?:a|an)\s+(?:stereotype|misinformation|conspiracy|dehumani[sz]ation)\s*(?:post|category)?[.,]"
    r"|\b(?:the|this|that)\s+(?:author|user|poster|writer|analysis|analyst|moderator)(?:'s)?\b"
    r"|\b(?:counter-?speech|hate\s+speech\s+analyst|categor(?:y|ies)|as\s+an\s+ai|language\s+model)\b"
    r"|\b(?:the\s+author's|your)\s+tone\b"
    r"|\b(?:the|this|that)\s+speaker\b|\bfeel\s+free\s+to\b|\bcheckable\b"
    r"|\bas\s+an?\s+(?:\w+\s+)?\w+,\s+I\b",  # a persona the model invents: "As a Muslim, I ..."
    re.IGNORECASE,
)


# "This statement is false": a verdict on a label for the post instead of an answer to its writer.
# On the graded silver dev drafts 3 of 16 such replies were usable (36% of the others); graders
# called the opener meta talk and what followed mostly a bare denial. A label followed by facts
# ("That claim was tested publicly and withdrawn: ...", the shipped bank) passes.
LABELLED = re.compile(r"\b(?:this|that)\s+(?:statement|claim|post|comment|tweet)s?\s+(?:is|are)\s+(?:\w+ly\s+)?"
                      r"(?:not\s+)?(?:false|incorrect|inaccurate|untrue|wrong|true|accurate|correct|offensive|"
                      r"harmful|hurtful|unfair|baseless|misleading|dismissive)\b", re.IGNORECASE)


def meta_problem(text: str, instructions: str = "") -> Problem | None:
    """Talk about the author, their tone or our analysis instead of to the reader, a label for
    the post ("this statement is false"); or the prompt's own instructions copied into the reply
    (6+ words in a row)."""
    found = _found(META, text, "meta", "speak directly to the person, without describing the post's author, "
                                       "its tone or any analysis") or \
        _found(LABELLED, text, "meta", "speak to the person instead of labelling their words")
    if found or not instructions:
        return found
    reply_words, told = words(text), words(instructions)
    run = longest_run(told, reply_words)
    if run.size >= ECHO_MIN_WORDS:
        copied = " ".join(told[run.a : run.a + run.size])
        return Problem("meta", f'it copies its instructions ("{copied[:80]}"); write only the reply itself')
    return None


ECHO_MIN_WORDS = 6  # a reply that repeats six words of its prompt in a row is reciting it


SENTENCE = re.compile(r"[^.!?。！？]+[.!?。！？]*")
