"""What a reviewer should look at for each flag a FIRE result can carry: one line each, shown by
`rebuttal respond` under a flagged draft (the review page shows the flags and checks)."""

from __future__ import annotations

# draft_<check>: the kept reply failed that check (fire/checks.py); the others are stage flags.
ADVICE = {
    "draft_citations": "it cites a source number that is not in the evidence: delete the marker or the claim",
    "draft_numbers": "it states a number no evidence holds: check it against a source or delete it",
    "draft_sources": "it names a source that was not retrieved: check it or delete it",
    "draft_restatement": "it may repeat the post's claim as its own: make sure it rejects the claim",
    "draft_contradiction": "it may say the post is fine and then argue against it: keep one message",
    "draft_concession": "it may grant part of the claim ('some of them ...'): remove the concession",
    "draft_overclaim": "it may make a sweeping claim in reverse ('all of them are ...'): soften it",
    "draft_othering": "it may talk about the group as 'them' against 'us': reword it",
    "draft_slur": "it contains a slur: remove it before anything else",
    "draft_meta": "it talks about 'the post' or the task instead of answering: rewrite as a reply",
    "draft_injection": "it may do what the post tells it to or agree with the post: write the reply yourself",
    "draft_repetition": "it repeats itself: cut the repeated part",
    "draft_truncation": "it stops mid-sentence: finish or cut the last sentence",
    "draft_script": "it mixes scripts or languages: rewrite in the post's language",
    "draft_substance": "it only denies the claim: add a reason, a fact or an example",
    "draft_faithfulness": "it answers something the post did not say: check it against the post",
    "draft_relevance": "it may not answer this post: compare it with the post before using it",
    "draft_review_score": "the learned draft score rates it unlikely to be postable: read it closely",
    "draft_review_fallback": "the draft score ran without the chat model it reads: trust it less",
    "draft_relevance_unchecked": "no sentence encoder was installed, so relevance was not checked",
    "reply_from_weak_block": "no vetted block passed the draft score and the model's draft failed a check, so the best-ranked block stands in: check it answers the post, or take another candidate",
    "reply_slur_replaced": "a slur in the draft was replaced by the people it names: reread the sentence",
    "generator_failed": "no reply could be written: answer it yourself or retry",
    "gate_fallback": "the language's own hate gate could not run: confirm the post is hateful",
    "gate_llm_disagrees": "the chat model thinks the post is not hateful: confirm it is before replying",
    "gate_missed_slur": "the gate let it pass but it uses a slur: decide whether it needs a reply",
    "category_fallback": "the category model could not run: check the category and strategy",
    "analyst_fallback": "the analyst's output was unusable: check the category and target group",
    "analyst_reasoning_contradicts": "the analyst's reasoning calls the post harmless: confirm it is hateful",
    "search_degraded": "evidence search ran degraded: the reply may lack facts it could use",
    "search_failed": "evidence search failed: the reply states no retrieved facts",
}


def advice(flag: str) -> str:
    return ADVICE.get(flag, "read the trace for this flag")
