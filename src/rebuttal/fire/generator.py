"""FIRE phase 2 (CARE): the Counterspeech Generator.

In its default form (`generator`) it sees a fresh short conversation: the post, its target, the
move for its category and evidence that fits; the `draft_baseline` form asks the zero-shot
baseline's question after the analyst's system text and post, with that evidence. Either may add a
human reply to a similar post to adapt. Every draft goes through the
checks in checks.py; a failed draft is regenerated with the problems stated (bounded) and the best
draft is returned with its checks, the learned draft score's (rebuttal.learned.draft_score)
among them. Whether it is kept, and the flags, are decided by fire/candidates.py and the pipeline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from rebuttal.fire.checks import Problem, check_draft, failures, relevance_problem
from rebuttal.fire.choice import prefer_second
from rebuttal.fire.prompting import (
    BaselineOutput, Exemplar, ReplyDraft, citation_rule, clip, post_prefix, prompt, quote_post,
    render_evidence,
)
from rebuttal.fire.sentences import first_sentences, sentences
from rebuttal.fire.slurs import name_the_people
from rebuttal.fire.sourcing import attributed_evidence, cited_numbers
from rebuttal.learned.text import language
from rebuttal.llm import ChatModel, Message, StructuredOutputError, generate_object
from rebuttal.types import Analysis, CheckResult, EvidenceItem, Reply, Trace, TraceStep

# A draft failing one of these cannot be posted; the others need a light edit at most.
SEVERE = {"relevance", "contradiction", "faithfulness", "script", "truncation", "repetition"}
REGENERATION_TEMPERATURE = 0.7
# The generator's prompt forms, prompt name -> (answer schema, token limit): `generator` names the
# claim, then replies; `draft_baseline` is the zero-shot baseline's call (its own short analysis,
# then the reply, 400 tokens like the baseline) after the analyst's prefix, with FIRE's evidence.
FORMS = {"generator": (ReplyDraft, 200), "draft_baseline": (BaselineOutput, 400)}


def _string_field(raw: str, name: str, closed: bool) -> str | None:
    """A JSON string field of `raw` (unescaped), also when the text stops inside it (closed=False)."""
    found = re.search(rf'"{name}"\s*:\s*"((?:[^"\\]|\\.)*)' + ('"' if closed else ""), raw or "")
    if not found:
        return None
    body = found.group(1)
    for cut in (len(body), len(body) - 1):  # a cut right after a backslash leaves a broken escape
        try:
            return json.loads(f'"{body[:cut]}"')
        except json.JSONDecodeError:
            continue
    return None


def salvage_reply(raw: str) -> ReplyDraft | None:
    """The reply of an invalid JSON answer, mostly one cut off by the token limit (the 1.5B
    model sometimes writes on past 60 words): its text so far, for `first_sentences` to keep
    the complete sentences of."""
    # the reply's field in each form: `reply` (generator), `counterspeech` (draft_baseline)
    text = _string_field(raw, "reply", closed=False) or _string_field(raw, "counterspeech", closed=False)
    if text is None:
        return None
    claim = _string_field(raw, "claim", closed=True) or _string_field(raw, "analyst_reasoning", closed=True)
    try:
        return ReplyDraft(claim=(claim or "")[:200], reply=text)
    except ValueError:  # too short to be a reply
        return None


def severity(results: Sequence[CheckResult]) -> int:
    return sum(3 if r.name in SEVERE else 1 for r in failures(results))


@dataclass
class Draft:
    text: str
    checks: list[CheckResult]


class DraftJudge:
    """Runs every check on a draft; relevance uses sentence vectors when an encoder is given, and
    so does the learned draft score (`review`) when one is given."""

    def __init__(self, encoder=None, draft_score=None):
        self.encoder = encoder
        self.draft_score = draft_score if encoder is not None else None

    def review(self, text: str, post: str) -> list[CheckResult]:
        """The draft score as a check on the kept draft: flags, never rewrites (English only: it
        was trained on English replies). Scored by its MiniLM fallback, a second check fails."""
        return self.reviews(post, [text])[0]

    def reviews(self, post: str, texts: list[str]) -> list[list[CheckResult]]:
        """`review` of each of `texts` as a reply to `post`, in one pass of the draft score."""
        if self.draft_score is None or language(post) != "en" or not texts:
            return [[] for _ in texts]
        return [_review_checks(review) for review in self.draft_score.reviews(post, texts, self.encoder)]

    def judge(self, text: str, post: str, evidence: Sequence[EvidenceItem], others: Sequence[str],
              post_vector: np.ndarray | None, stopped_at_limit: bool) -> list[CheckResult]:
        relevance: Problem | None = None
        if self.encoder is not None:
            vectors = self.encoder.encode([text, *others] + ([] if post_vector is not None else [post]))
            post_vec = post_vector if post_vector is not None else vectors[-1]
            relevance = relevance_problem(vectors[0], post_vec, vectors[1 : 1 + len(others)])
        return check_draft(text, post, evidence, stopped_at_limit=stopped_at_limit, relevance=relevance,
                           relevance_ran=self.encoder is not None, instructions=instructions())


def _review_checks(review) -> list[CheckResult]:
    detail = f"learned draft score: chance a grader calls it usable {review.chance:.2f} (cut {review.cut:.2f})"
    if not review.passed:
        detail += "; read it closely: drafts scored this low were mostly vague, conceding, muddled or beside the claim"
    checks = [CheckResult(name="review_score", passed=review.passed, detail=detail, score=round(review.chance, 4))]
    if review.fallback:
        checks.append(CheckResult(name="review_fallback", passed=False, detail=(
            "scored by the draft score's MiniLM fallback: the embedded chat model it reads is not installed")))
    return checks


def review_chance(checks: Sequence[CheckResult]) -> float | None:
    """The draft score's chance among a reply's checks (None: not scored)."""
    return next((c.score for c in checks if c.name == "review_score"), None)


def moves() -> dict[str, str]:
    """What the reply does for each category (prompts/moves.v2.txt), plus `uncertain`."""
    lines = prompt("moves").template.splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


@lru_cache(maxsize=1)
def instructions() -> str:
    """Everything the generator's prompts tell the model, for the echo check (a reply that
    recites its instructions, seen on silver dev: "Show how different the people ...")."""
    return " ".join([*(prompt(form).template for form in FORMS), *moves().values(), prompt("regenerate").template,
                     prompt("reply_system").template])


def named_target(target_group: str) -> str:
    """The target as the reply may name it: the label set's catch-alls ("Others") read as a
    group's name in a reply ("the uniqueness of Others"), so they become a description."""
    if not target_group or target_group.strip().lower() in ("others", "other", "affected person", "individual"):
        return "the people it targets"
    return target_group


def generator_messages(analysis: Analysis, evidence: Sequence[EvidenceItem], post: str,
                       adapt: Exemplar | None = None, uncertain: bool = False,
                       advice: str = "", form: str = "generator", name_people: bool = False) -> tuple[list[Message], str]:
    """The conversation for `form`, with fitting evidence (and, for a regeneration, the advice).
    Neither form holds the analyst's reasoning: with it in context the 1.5B model talked about the
    post ("The post is a stereotype ...") instead of answering it (issue 12). `name_people`: the
    task shows the post with its slurs replaced by the people they name (slurs.py); the
    draft_baseline form's shared prefix keeps the post as the analyst read it."""
    template = prompt(form)
    adapt_block = ""
    if adapt is not None:
        adapt_block = (f'A person once answered a similar post with: "{clip(adapt.reply)}" '
                       "Reuse its idea only where it fits this post, in your own words.\n")
    move = moves()["uncertain" if uncertain else analysis.category.value]
    version = template.version + (f"+{prompt('moves').version}" if "$move" in template.template else "")
    advice_block = ""
    if advice:  # a regeneration: the same task, with what the rejected draft got wrong
        retry = prompt("regenerate")
        advice_block, version = retry.render(advice=advice).strip(), f"{version}+{retry.version}"
    text = template.render(
        post=quote_post(name_the_people(post)[0] if name_people else post),
        target_group=named_target(analysis.target_group), move=move,
        adapt_block=adapt_block, evidence_block=render_evidence(evidence), citation_rule=citation_rule(evidence),
        advice_block=advice_block, language="Chinese" if language(post) == "zh" else "English",
        # the baseline's own prompt names no language: English posts get it unchanged
        language_rule=" Write the counterspeech in Chinese." if language(post) == "zh" else "",
    )
    text = "\n".join(line for line in text.splitlines() if line.strip())
    if form == "draft_baseline":  # after the analyst's own prefix, so llama.cpp reuses its cache
        return [*post_prefix(post), {"role": "user", "content": text}], version
    messages: list[Message] = [{"role": "system", "content": prompt("reply_system").template.strip()},
                               {"role": "user", "content": text}]
    return messages, version


class Generator:
    """`compare`: when the first draft passes every check, sample one more and keep it only if it
    passes too and the model prefers it in both orders (choice.py)."""

    def __init__(self, model: ChatModel, max_tokens: int | None = None, encoder=None, max_regenerations: int = 2,
                 compare: bool = False, draft_score=None, form: str = "generator", name_people: bool = False):
        if form not in FORMS:
            raise ValueError(f"unknown generator form {form!r}; choose from {', '.join(FORMS)}")
        self.model = model
        self.form = form
        self.schema, own_limit = FORMS[form]
        self.max_tokens = max_tokens or own_limit
        self.judge = DraftJudge(encoder, draft_score)
        self.max_regenerations = max_regenerations
        self.compare = compare
        self.name_people = name_people

    def _draft(self, messages: list[Message], step: TraceStep, attempt: int) -> tuple[ReplyDraft | None, bool]:
        """(the draft or None, whether decoding stopped at the token limit). The first draft is
        greedy; a regeneration samples (seeded), since greedy decoding tended to repeat the
        same fault even when told about it."""
        temperature = 0.0 if attempt == 0 else REGENERATION_TEMPERATURE
        try:
            result = generate_object(self.model, messages, self.schema, max_tokens=self.max_tokens,
                                     temperature=temperature, seed=attempt)
        except StructuredOutputError as exc:
            step.record(exc)
            salvaged = salvage_reply(exc.raw)  # then treated as cut off: its last sentence is dropped
            step.notes.append(f"invalid generator output: {str(exc)[:200]}" +
                              ("; the reply it had written so far was kept" if salvaged else ""))
            return salvaged, True
        step.record(result)
        last = result.completions[-1] if result.completions else None
        at_limit = last is not None and last.usage.completion_tokens >= self.max_tokens
        return result.value, at_limit

    def _attempt(self, messages: list[Message], step: TraceStep, attempt: int, post: str,
                 evidence: Sequence[EvidenceItem], others: list[str],
                 post_vector: np.ndarray | None) -> Draft | None:
        """One draft, cut to its complete sentences and checked; the trace notes how it went."""
        draft, at_limit = self._draft(messages, step, attempt)
        if draft is None:
            return None
        text, unfinished, dropped = first_sentences(draft.reply, at_limit)
        step.notes.append(f"draft {attempt + 1} answers the claim: {draft.claim.strip()[:160]}")
        if dropped:
            step.notes.append(f"draft {attempt + 1}: kept the first {len(sentences(text))} sentences, "
                              f"left out {dropped}")
        checks = self.judge.judge(text, post, evidence, others, post_vector, unfinished)
        problems = failures(checks)
        step.notes.append(f"draft {attempt + 1}: " + ("all checks passed" if not problems else
                                                      "failed " + ", ".join(r.name for r in problems)))
        return Draft(text, checks)

    def run(self, post: str, analysis: Analysis, evidence: Sequence[EvidenceItem], trace: Trace, *,
            adapt: Exemplar | None = None, post_vector: np.ndarray | None = None,
            uncertain: bool = False) -> Reply | None:
        """`uncertain`: the category is below the category model's ambiguity cut, so the reply
        gets a move that does not depend on it."""
        task, version = generator_messages(analysis, evidence, post, adapt, uncertain, form=self.form,
                                           name_people=self.name_people)
        messages = task  # later attempts add advice to the task
        step = trace.add(TraceStep(stage="generator", model=self.model.name, prompt_version=version, attempts=0))
        if self.name_people and (slurs := name_the_people(post)[1]):
            step.notes.append(f"the model saw the post with its {slurs} slur(s) replaced by the people they name")
        # What a draft may answer instead of the post: the exemplar post it was shown. (Evidence
        # is not among them: it passed the fit test, and a reply may lean on it heavily.)
        others = [adapt.post] if adapt is not None else []
        drafts: list[Draft] = []
        for attempt in range(1 + self.max_regenerations):
            draft = self._attempt(messages, step, attempt, post, evidence, others, post_vector)
            if draft is None:
                break
            drafts.append(draft)
            problems = failures(draft.checks)
            if not problems:
                break
            # The same task with advice added, not a conversation about the bad draft: shown its
            # draft and the problem, the 1.5B model answered the critique ("Sorry, but ...").
            advice = "; ".join(dict.fromkeys(r.detail.rsplit("; ", 1)[-1] for r in problems))
            messages, step.prompt_version = generator_messages(analysis, evidence, post, adapt, uncertain, advice,
                                                                  self.form, self.name_people)
        if not drafts:
            trace.flag("generator_failed")
            return None
        best = min(drafts, key=lambda d: severity(d.checks))  # the first of equals: min is stable
        if self.compare and len(drafts) == 1 and not failures(best.checks):
            rival = self._attempt(task, step, 1, post, evidence, others, post_vector)  # sampled
            if rival is not None:
                drafts.append(rival)
                if not failures(rival.checks) and prefer_second(
                        self.model, post, named_target(analysis.target_group), best.text, rival.text, trace):
                    best = rival
        checks = [*best.checks, *self.judge.review(best.text, post)]
        return Reply(text=best.text, strategy=analysis.category.strategy,
                     cited_evidence_ids=self._cited(best.text, evidence, step),
                     checks=checks, drafts=len(drafts), adapted_from=adapt.id if adapt else None)

    @staticmethod
    def _cited(text: str, evidence: Sequence[EvidenceItem], step: TraceStep) -> list[str]:
        explicit = [n for n in cited_numbers(text) if 1 <= n <= len(evidence)]
        implicit = [n for n in attributed_evidence(text, evidence) if n not in explicit]
        if implicit:
            step.notes.append("uses without a marker: " + ", ".join(evidence[n - 1].id for n in implicit))
        cited = [evidence[n - 1].id for n in sorted({*explicit, *implicit})]
        if evidence and not cited:  # allowed: the checks keep an uncited reply free of facts
            step.notes.append("the reply does not use the evidence")
        return cited


def reply_problems(text: str, post: str, evidence: Sequence[EvidenceItem]) -> list[str]:
    """The text-only checks' problems (no relevance: no encoder), for single-call baselines."""
    return [r.detail for r in failures(check_draft(text, post, evidence, relevance_ran=False))]
