"""FIRE phase 2 (CARE): the Counterspeech Generator and the reply checks.

A reply is rejected (and regenerated once, then flagged) when it cites an evidence number that
was not retrieved, or restates a long stretch of the hateful post, which is how a small model
repeats the claim as if it were fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from rebuttal.fire.prompting import (
    Exemplar, ReplyDraft, citation_rule, prompt, render_evidence, render_style_replies,
)
from rebuttal.llm import ChatModel, Message, StructuredOutputError, generate_object
from rebuttal.types import Analysis, EvidenceItem, Reply, Trace, TraceStep

CITATION = re.compile(r"\[(\d{1,2})\]")
WORD = re.compile(r"\w+", re.UNICODE)
RESTATE_MIN_WORDS = 5  # a shared run this long copies the claim rather than referring to it


def cited_numbers(text: str) -> list[int]:
    return sorted({int(n) for n in CITATION.findall(text)})


# Words just before a copied run that show the reply reports the claim rather than asserts it.
DISTANCING = {"claim", "claims", "claiming", "idea", "notion", "myth", "belief", "say", "says", "saying",
              "said", "suggest", "suggests", "suggesting", "assert", "asserts", "argue", "argues",
              "not", "no", "never", "isn", "aren", "don", "doesn", "t", "false", "wrong", "untrue"}


def restated_run(reply: str, post: str) -> str | None:
    """The longest run of words the reply copies from the post, if long enough to restate the
    claim and not framed as a report of it ("the claim that ...", a negation, quotation marks)."""
    post_words = [w.lower() for w in WORD.findall(post)]
    reply_words = [w.lower() for w in WORD.findall(reply)]
    if not post_words or not reply_words:
        return None
    match = SequenceMatcher(None, post_words, reply_words, autojunk=False).find_longest_match()
    # Short posts: copying most of the post is a restatement even below the fixed minimum.
    needed = min(RESTATE_MIN_WORDS, max(4, int(0.8 * len(post_words))))
    if match.size < needed:
        return None
    copied = " ".join(post_words[match.a : match.a + match.size])
    before = set(reply_words[max(0, match.b - 8) : match.b])  # "the notion that ...", "it is false that ..."
    if before & DISTANCING or _quoted(reply, copied):
        return None
    return copied


def _quoted(reply: str, copied: str) -> bool:
    """True when the copied words sit inside quotation marks in the reply."""
    for quote in re.findall(r'["“«„](.+?)["”»“]', reply):
        if copied in " ".join(w.lower() for w in WORD.findall(quote)):
            return True
    return False


NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def unsupported_numbers(text: str, post: str, evidence: Sequence[EvidenceItem]) -> list[str]:
    """Numbers (years, statistics) in the reply that neither the evidence nor the post contains:
    a small model's way of citing a source it only remembers, e.g. from an exemplar reply."""
    known = set(NUMBER.findall(post))
    for item in evidence:
        known.update(NUMBER.findall(" ".join(filter(None, (item.text, item.source, item.date)))))
    body = CITATION.sub(" ", text)
    return sorted({n for n in NUMBER.findall(body) if n not in known})


def attributed_evidence(text: str, evidence: Sequence[EvidenceItem], min_run: int = 4) -> list[int]:
    """Evidence numbers the reply draws on without citing: it repeats one of the item's numbers
    (a statistic, a year) or a run of `min_run` of its words. Small models often use the facts
    but drop the [n] marker; a reviewer still needs to see where each fact came from."""
    reply_words = [w.lower() for w in WORD.findall(text)]
    reply_numbers = set(NUMBER.findall(CITATION.sub(" ", text)))
    used = []
    for number, item in enumerate(evidence, 1):
        item_words = [w.lower() for w in WORD.findall(item.text)]
        shared = SequenceMatcher(None, item_words, reply_words, autojunk=False).find_longest_match()
        if shared.size >= min_run or reply_numbers & set(NUMBER.findall(item.text)):
            used.append(number)
    return used


def reply_problems(text: str, post: str, evidence: Sequence[EvidenceItem]) -> list[str]:
    problems = []
    numbers = unsupported_numbers(text, post, evidence)
    if numbers:
        problems.append(f"it states {', '.join(numbers)}, which no retrieved evidence contains; use only the numbered evidence")
    unknown = [n for n in cited_numbers(text) if not 1 <= n <= len(evidence)]
    if unknown:
        have = f"[1] to [{len(evidence)}]" if evidence else "none"
        problems.append(f"it cites {', '.join(f'[{n}]' for n in unknown)} but the evidence is {have}")
    copied = restated_run(text, post)
    if copied:
        problems.append(f'it repeats the post\'s words "{copied}"; refer to the claim without restating it')
    return problems


class Generator:
    def __init__(self, model: ChatModel, max_tokens: int = 256):
        self.model = model
        self.max_tokens = max_tokens

    def _draft(self, messages: list[Message], step: TraceStep) -> str | None:
        try:
            result = generate_object(self.model, messages, ReplyDraft, max_tokens=self.max_tokens)
        except StructuredOutputError as exc:
            step.latency_s += exc.latency_s
            step.usage = step.usage + exc.usage
            step.attempts += exc.attempts
            step.notes.append(f"invalid generator output: {str(exc)[:200]}")
            return None
        step.latency_s += result.latency_s
        step.usage = step.usage + result.usage
        step.attempts += result.attempts
        return result.value.reply.strip()

    def run(
        self,
        post: str,
        conversation: list[Message],
        task: str,
        task_version: str,
        evidence: Sequence[EvidenceItem],
        strategy: str,
        trace: Trace,
    ) -> Reply | None:
        """Write, check, regenerate once, flag. `conversation` is the shared prefix (plus the
        analyst's turn) so the backend reuses its KV cache."""
        step = trace.add(TraceStep(stage="generator", model=self.model.name, prompt_version=task_version, attempts=0))
        messages = [*conversation, {"role": "user", "content": task}]
        text = self._draft(messages, step)
        problems = reply_problems(text, post, evidence) if text else ["no valid reply"]
        if problems and text:
            step.notes.append("rejected: " + "; ".join(problems))
            retry = prompt("regenerate")
            step.prompt_version = f"{task_version}+{retry.version}"
            messages += [
                {"role": "assistant", "content": ReplyDraft(reply=text).model_dump_json()},
                {"role": "user", "content": retry.render(problems="; ".join(problems))},
            ]
            second = self._draft(messages, step)
            if second:
                text, problems = second, reply_problems(second, post, evidence)
        if not text:
            trace.flag("generator_failed")
            return None
        if problems:
            step.notes.append("still failing after one regeneration: " + "; ".join(problems))
            trace.flag("reply_check_failed")
        explicit = [n for n in cited_numbers(text) if 1 <= n <= len(evidence)]
        implicit = [n for n in attributed_evidence(text, evidence) if n not in explicit]
        if implicit:
            step.notes.append("uses without a marker: " + ", ".join(evidence[n - 1].id for n in implicit))
        cited = [evidence[n - 1].id for n in sorted({*explicit, *implicit})]
        if evidence and not cited:
            trace.flag("evidence_not_cited")
        return Reply(text=text, strategy=strategy, cited_evidence_ids=cited)


def generator_task(analysis: Analysis, evidence: Sequence[EvidenceItem],
                   exemplars: Sequence[Exemplar] = ()) -> tuple[str, str]:
    template = prompt("generator")
    text = template.render(
        category=analysis.category.value,
        target_group=analysis.target_group,
        strategy=analysis.category.strategy,
        style_block=render_style_replies(exemplars, analysis.category),
        evidence_block=render_evidence(evidence),
        citation_rule=citation_rule(evidence),
    )
    return text.strip(), template.version
