"""The 0-shot single-pass extractor on the same backbone (the paper's baseline)."""

from __future__ import annotations

from rebuttal.llm import ChatModel
from rebuttal.llm.prompts import load_prompt
from rebuttal.spar.calls import Stage, call_object
from rebuttal.spar.roles import _lenient
from rebuttal.spar.schemas import role_schema
from rebuttal.spar.segmenter import PACKAGE
from rebuttal.spar.settings import SparSettings
from rebuttal.spar.spans import as_data, locate, output_target
from rebuttal.data.vocab import NON_HATE, Track, normalize_group
from rebuttal.types import SparTuple


def zero_shot(model: ChatModel, post: str, track: str, settings: SparSettings) -> tuple[list[SparTuple], Stage]:
    stage = Stage("zero-shot")
    prompt = load_prompt(PACKAGE, f"zeroshot.{track}")
    stage.uses(prompt.version)
    messages = [{"role": "user", "content": prompt.render(post=as_data(post))}]
    value, raw = call_object(model, messages, role_schema(track), stage,
                             max_tokens=settings.max_tokens_zero_shot, label="zero-shot")
    if value is not None:
        rows = [t.model_dump() for t in value.tuples]
    else:
        rows = _lenient(raw, track)
        if rows:
            stage.note("zero-shot: repaired from invalid output")
        else:
            stage.flag("zero-shot: no usable output")
    tuples = []
    for row in rows:
        argument = str(row.get("argument", "")).strip()
        if not argument:
            stage.note("zero-shot: tuple with empty argument dropped")
            continue
        if locate(argument, post) is None:
            stage.flag(f"ungrounded argument kept as written: {argument[:40]!r}")
        target = output_target(row.get("target"))
        label = int(row.get("harmful", 0))
        group = None
        if Track(track).has_group:
            group = NON_HATE if label == 0 else normalize_group(row.get("group"))
        # The baseline's spans are kept as the model wrote them (no auditor tightening).
        tuples.append(SparTuple(target=target, argument=argument, label=label, group=group))
    return tuples, stage
