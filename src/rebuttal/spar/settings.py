"""Every number the SPAR-Hate auditor uses, with the paper's values as defaults.

Where the paper gives no value (the α and β weights, λ1, λ2, beacon sizes) the defaults are
ours. With them a single well-formed, exactly grounded candidate from one role scores
q 1.0 + λ1 0.25 + grounding beacon 0.10 = 1.35 (1.50 for a hateful victim-only one, with the
micro-aggression beacon), above the paper's 1.05 floor: the floor alone
does not keep one-role clusters out, `supplemental_min_roles` does. A supplemental cluster
(≥ 2 roles, each member q ≥ 0.60) scores at least 1.2 + 0.5 = 1.7, so the floor only bites
after role down-weighting (−0.20 per candidate) or the quotation beacon (−0.10) pull scores
down. `tests/test_spar_grounding.py` checks these numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROLES = ("victim", "moderator", "bystander")
# The full pipeline, the 0-shot baseline, the trained tagger alone, the pipeline with the tagger as a
# fourth role, the tagger's tuples reviewed by the roles and kept, relabelled or dropped by the auditor.
SYSTEMS = ("spar", "spar-0shot", "spar-tagger", "spar+tagger", "spar-tagger+audit")
DEFAULT_SYSTEM = "spar-tagger"  # what `rebuttal parse`, `rebuttal.parse` and `default_parser` use


@dataclass
class SparSettings:
    # Paper (14B mainline) values.
    quality_threshold: float = 0.60
    cluster_similarity: float = 0.66
    max_clusters: int = 2
    score_floor: float = 1.05
    supplemental_min_roles: int = 2
    regenerate: bool = True  # one bounded round for defective roles
    # Quality weights α over the features φ (normalised over the active ones).
    alpha_grounding: float = 0.35
    alpha_target: float = 0.15
    alpha_canonical: float = 0.15
    alpha_structure: float = 0.15
    alpha_label: float = 0.10
    alpha_coherence: float = 0.10  # four-field track only
    # Cluster similarity weights β (β_g is forced to 0 on three-field tracks).
    beta_target: float = 0.35
    beta_argument: float = 0.40
    beta_label: float = 0.25
    beta_group: float = 0.15
    # Cluster score = Σ q + λ1·|supporting roles| + λ2·lexicon bonus (+ beacons).
    lambda_roles: float = 0.25
    lambda_lexicon: float = 0.15
    consensus_margin: float = 0.5  # top cluster must lead the runner-up by this much
    beacon_grounding: float = 0.10
    beacon_quotation: float = 0.10
    beacon_microaggression: float = 0.15
    arbiter_bonus: float = 0.50  # the arbiter's pick, added before the deterministic ranking
    downweight_penalty: float = 0.20  # per candidate of a role the auditor marks "downweighted"
    # Limits.
    max_units: int = 4
    max_tuples_per_role: int = 3
    max_lexicon_hints: int = 5
    max_rationale_words: int = 30
    dedup: bool = True  # exact deduplication at reassembly
    # Ablations (the paper's Table 3) and the baseline.
    use_segmenter: bool = True
    roles: tuple[str, ...] = ROLES
    use_auditor: bool = True
    use_arbiter: bool = True
    zero_shot: bool = False
    # Decoding.
    max_tokens_segmenter: int = 384
    max_tokens_role: int = 256
    max_tokens_arbiter: int = 192
    max_tokens_zero_shot: int = 384
    max_tokens_review: int = 384
    # The tagger audit (spar-tagger+audit), ours: a tagger tuple is dropped or relabelled, and a
    # tuple the roles name as missed is added, only on this many role votes and a majority of the
    # roles that answered; at most `audit_max_added` added tuples per post.
    audit_min_votes: int = 2
    audit_max_added: int = 2
    lexicon_path: Path | None = None

    def __post_init__(self) -> None:
        unknown = [r for r in self.roles if r not in ROLES]
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}; choose from {', '.join(ROLES)}")
        if not self.zero_shot and not self.roles:
            raise ValueError("at least one role is needed (or zero_shot=True)")
        self.roles = tuple(self.roles)
        if self.lexicon_path is not None:
            self.lexicon_path = Path(self.lexicon_path)

    @property
    def system(self) -> str:
        if self.zero_shot:
            return "spar-0shot"
        parts = []
        if not self.use_segmenter:
            parts.append("no-segmenter")
        parts += [f"no-{r}" for r in ROLES if r not in self.roles]
        if not self.use_auditor:
            parts.append("no-auditor")
        return "spar" + "".join(f"[{p}]" for p in parts)
