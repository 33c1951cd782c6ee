"""Best of several drafts: the model picks between two drafts that passed every check.

Asked in both orders, since a small model tends to prefer whichever reply comes first; only an
answer that holds in both orders replaces the first draft (greedy), so a position bias costs two
short calls and changes nothing.
"""

from __future__ import annotations

from rebuttal.fire.prompting import ask_letter, prompt, quote_post
from rebuttal.llm import ChatModel
from rebuttal.types import Trace, TraceStep


def ask_preference(model: ChatModel, post: str, target_group: str, first: str, second: str,
                   step: TraceStep) -> str:
    """The model's letter for "which is better", A (first) or B (second); anything else is ''."""
    answer, completion = ask_letter(model, "choose", 2, post=quote_post(post), target_group=target_group,
                                    first=first, second=second)
    step.latency_s, step.usage = step.latency_s + completion.latency_s, step.usage + completion.usage
    step.attempts += 1
    return answer if answer in ("A", "B") else ""


def prefer_second(model: ChatModel, post: str, target_group: str, first: str, second: str,
                  trace: Trace) -> bool:
    """True when the model prefers `second` in both orders; the trace keeps both answers."""
    step = trace.add(TraceStep(stage="choice", model=model.name, prompt_version=prompt("choose").version,
                               attempts=0))
    forward = ask_preference(model, post, target_group, first, second, step)
    backward = ask_preference(model, post, target_group, second, first, step)
    chosen = forward == "B" and backward == "A"
    step.notes.append(f"first draft vs sample: {forward or '?'} / swapped: {backward or '?'}; "
                      + ("the sample is kept" if chosen else "the first draft is kept"))
    return chosen
