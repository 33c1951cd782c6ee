"""Form checks: is the draft whole, said once, in the post's script? (Decoding defects of the
1.5B model on silver dev: loops, cut-off sentences, stray Chinese in English replies.)"""

from __future__ import annotations

import re
from collections import Counter

from rebuttal.fire.coherence import SENTENCE, Problem, words
from rebuttal.learned.text import CJK, LATIN, language

CIRCULAR = re.compile(r"([^.!?]*?)\bbecause\s+([^.!?]+)", re.IGNORECASE)
FILLER = {"they", "them", "their", "it", "its", "this", "that", "is", "are", "was", "were", "a", "an", "the", "of",
          "to", "in", "for", "not", "no", "just", "simply", "so", "also", "be", "been"}


def circular_reason(text: str) -> str | None:
    """"They are not different because they are not different": a reason made only of the words
    of what it explains (silver dev)."""
    for found in CIRCULAR.finditer(text):
        claim, reason = found.groups()
        if text[found.end() : found.end() + 1] == "?":  # a rhetorical question ("... because they are black?")
            continue
        given = {w for w in words(reason) if len(w) > 2} - FILLER
        if given and given <= set(words(claim)):
            return f"{claim.strip()} because {reason.strip()}"
    return None


# A run of this many words said twice is a sentence said again with a word changed ("It is (also)
# important to recognize that women have a wide range of ..."). Chosen on the graded silver dev
# drafts: 8 words flag 7 drafts the sentence check missed, 1 of them graded usable (6 and 7
# words: 2 usable; 10: 5 caught).
TWICE_WORDS = 8


def repetition_problem(text: str) -> Problem | None:
    """A sentence said twice (or again with a word changed: an 8-word run twice), one 6-word
    phrase three times (a decoding loop; human replies repeat short phrases on purpose, "you have
    the right to ..."), or a reason that repeats its claim."""
    sentences = [" ".join(words(s)) for s in SENTENCE.findall(text)]
    sentences = [s for s in sentences if len(s.split()) >= 3]
    repeated = [s for s, n in Counter(sentences).items() if n > 1]
    circular = circular_reason(text)
    if circular:
        repeated.append(circular)
    tokens = words(text)
    grams = Counter(tuple(tokens[i : i + 6]) for i in range(len(tokens) - 5))
    looping = [g for g, n in grams.items() if n >= 3]
    runs = Counter(tuple(tokens[i : i + TWICE_WORDS]) for i in range(len(tokens) - TWICE_WORDS + 1))
    looping += [g for g, n in runs.items() if n >= 2]
    if not repeated and not looping:
        return None
    example = repeated[0] if repeated else " ".join(looping[0])
    return Problem("repetition", f'it repeats itself ("{example[:80]}"); say each thing once')


def truncation_problem(text: str, stopped_at_limit: bool = False) -> Problem | None:
    """Cut off by the token limit, ending mid-sentence, or starting mid-sentence (a fragment)."""
    stripped = text.strip().lstrip("\"'“‘«(")
    if stripped[:1].islower():
        return Problem("truncation", "it starts mid-sentence; write complete sentences")
    ending = stripped.rstrip("\"'”’»)]").rstrip()
    if not stopped_at_limit and ending[-1:] in tuple(".!?。！？…"):
        return None
    return Problem("truncation", "it stops mid-sentence; write a shorter reply that ends with a full sentence")


def script_problem(text: str, post: str) -> Problem | None:
    """English post, stray Chinese in the reply (or the other way round)."""
    post_cjk = language(post) == "zh"
    cjk, latin = len(CJK.findall(text)), len(LATIN.findall(text))
    if not post_cjk and cjk:
        return Problem("script", "it contains Chinese characters; answer in English only")
    if post_cjk and latin > 3 * max(cjk, 1):
        return Problem("script", "the post is in Chinese; answer in Chinese")
    return None
