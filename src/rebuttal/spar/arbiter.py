"""The arbiter: the auditor's one LLM call, made for conflict units only. Its answer only nudges
the deterministic ranking (a bonus for the chosen cluster, penalties for roles it downweights, a
tighter argument); the lane the unit was routed by is kept."""

from __future__ import annotations

import re

from rebuttal.llm import ChatModel
from rebuttal.llm.prompts import load_prompt
from rebuttal.spar.auditor import UnitAudit, ranked, score_clusters, triage
from rebuttal.spar.calls import Stage, call_objects
from rebuttal.spar.schemas import ArbiterDecision
from rebuttal.spar.segmenter import PACKAGE
from rebuttal.spar.settings import ROLES, SparSettings
from rebuttal.spar.spans import as_data, locate

_DOWNWEIGHT = re.compile(r"(victim|moderator|bystander)\s*[:：-]\s*(down|over|under)", re.IGNORECASE)


def cluster_listing(audit: UnitAudit) -> str:
    lines = []
    for number, cluster in enumerate(ranked(audit.clusters), 1):
        lines.append(f"[{number}] score {cluster.score:.2f}, roles: {', '.join(sorted(cluster.roles))}")
        for m in cluster.members:
            group = f", group={m.group}" if m.group else ""
            lines.append(f"    {m.role}: target={as_data(m.target)!r}, argument={as_data(m.argument)!r}, "
                         f"harmful={m.label}{group}; {as_data(m.rationale)[:160]}")
    return "\n".join(lines)


def arbitrate(model: ChatModel, audits: list[UnitAudit], post: str, track: str, s: SparSettings,
              active_roles: tuple[str, ...], stage: Stage) -> None:
    """One arbiter call per conflict unit (batched), applied in place."""
    if not audits:
        return
    prompt = load_prompt(PACKAGE, "arbiter")
    stage.uses(prompt.version)
    conversations = [[{"role": "user", "content": prompt.render(focus=a.unit.prompt_focus(),
                                                                clusters=cluster_listing(a))}] for a in audits]
    answers = call_objects(model, conversations, ArbiterDecision, stage, max_tokens=s.max_tokens_arbiter,
                           labels=[f"{a.unit.group_id}/arbiter" for a in audits])
    for audit, (decision, _raw) in zip(audits, answers):
        if decision is None:
            audit.notes.append("arbiter: no valid decision, ranking unchanged")
            continue
        apply_decision(audit, decision, post, s, active_roles)
        stage.note(f"{audit.unit.group_id}: arbiter chose cluster {decision.chosen}"
                   + (f"; corrections: {'; '.join(decision.corrections)}" if decision.corrections else ""))


def apply_decision(audit: UnitAudit, decision: ArbiterDecision, post: str, s: SparSettings,
                   active_roles: tuple[str, ...]) -> None:
    order = ranked(audit.clusters)
    audit.arbiter = decision.model_dump()
    if not 1 <= decision.chosen <= len(order):
        audit.notes.append(f"arbiter: cluster {decision.chosen} does not exist, ignored")
    else:
        chosen = order[decision.chosen - 1]
        chosen.arbiter_pick = True
        span = decision.argument.strip()
        if span:
            where = locate(span, audit.unit.group_text)
            if where is not None:
                chosen.tight_argument = audit.unit.group_text[where[0]:where[1]]
            else:
                audit.notes.append("arbiter: proposed argument not in focus, ignored")
    penalties = {}
    for correction in decision.corrections:
        match = _DOWNWEIGHT.search(correction)
        if match and match.group(1).lower() in ROLES:
            penalties[match.group(1).lower()] = s.downweight_penalty
    if penalties:
        audit.notes.append(f"arbiter downweighted: {', '.join(sorted(penalties))}")
    score_clusters(audit.clusters, audit.unit, post, s, penalties)
    # Tags and defects follow the new scores; the lane keeps how the unit was routed.
    after = triage(audit, active_roles, s)
    audit.tags, audit.defects = after.tags, after.defects
