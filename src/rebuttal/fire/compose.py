"""Replies composed from vetted blocks: the candidates the 1.5B cannot make harmful.

`compose_candidates` gives the blocks closest to the post's claim and the category's fallback,
which the draft score ranks with the post (fire/candidates.py); `compose` the closest alone.
The substance comes from the block library (blocks.py): the one block that answers the post's
claim best (a fact with its source, a counter-example, a norm) among those that attribute no
label to the post it never used. One block, not two: on graded dev posts a second, closing block
mostly rebutted something the post never said ("no secret plan to dominate men" under a reply
about work; benchmarks/results/fire_blocks.md). When no block answers the claim closely, the
category's fallback block (a universal norm, `fallback` in the library) stands in, and the result
says so. Who the post targets is named neutrally, from the group words or slurs the post uses
first and the analyst's target group otherwise, so no slur of the post reaches the reply. A
Chinese post gets its category's Chinese fallback (compose_zh.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rebuttal.fire.blocks import BlockLibrary, BlockMatch
from rebuttal.fire.compose_zh import fallback_zh, people_zh
from rebuttal.fire.slurs import people_plural, slur_used
from rebuttal.fire.sourcing import unsaid_label
from rebuttal.learned.text import language
from rebuttal.types import HateType

# A block written for the post's category ranks above one written for another with this much
# more cosine: the analyst's category is right about 7 times in 10 (analyst.md), so it weighs
# without deciding.
CATEGORY_BONUS = 0.08
# From this cosine a block answers the claim (set by reading dev matches: below it the closest
# block is mostly about something else; fire_blocks.md measures it).
ANSWERS = 0.5

TARGET_PEOPLE = {
    "Women": "women", "Men": "men", "LGBT+": "LGBT+ people", "Muslims": "Muslims", "Jews": "Jewish people",
    "Immigrants": "immigrants", "People of color": "people of colour", "Disabled": "disabled people",
    "Other religions": "people of other faiths", "Political group": "people who vote differently",
}
CATCH_ALL = {"Others", "Individual", "Affected person", "Men", "Political group", "Occupation"}
UNNAMED = "the people you are talking about"
# Words of the post that name the people, with the target group label they belong to. Used when
# the analyst's group is a catch-all or a list, and to name a group more exactly within its label.
NAMED = [
    (r"\btrans(?:gender|sexual)?s?\b|\btrann", "trans people", "LGBT+"),
    (r"\blesbians?\b|\bdykes?\b", "lesbians", "LGBT+"),
    (r"\bgays?\b|\bhomosexual|\bqueers?\b|\bfag", "gay people", "LGBT+"),
    (r"\brefugees?\b|\basylum", "refugees", "Immigrants"),
    (r"\bmigrants?\b", "migrants", "Immigrants"),
    (r"\bimmigrants?\b", "immigrants", "Immigrants"),
    (r"\bmuslims?\b|\bmoslems?\b|\bislam|\bmuzz|\btowelhead|\braghead|\bkoran\b|\bquran\b|\bsharia\b|\bmosques?\b",
     "Muslims", "Muslims"),
    (r"\bjews?\b|\bjewish\b|\bkikes?\b|\bzionists?\b", "Jewish people", "Jews"),
    (r"\bblacks\b|\bblack (?:people|folks?|men|women|guys|americans?|community)\b|\bnegro|\bafricans?\b|\bnigg|\bcoons?\b|\bafro-", "Black people", "People of color"),
    (r"\broma\b|\bgyps(?:y|ies)\b|\bgyppo", "Roma", "Others"),
    (r"\bchinese\b|\bchinks?\b", "Chinese people", "Others"),
    (r"\basians?\b|\bgooks?\b", "Asian people", "Others"),
    (r"\barabs?\b", "Arabs", "Others"),
    (r"\bmexicans?\b|\blatin(?:o|a|x)s?\b|\bhispanics?\b|\bspics?\b|\bwetback|\bbeaner", "Latinos", "Others"),
    (r"\bhindus?\b", "Hindus", "Other religions"),
    (r"\bfeminis(?:ts?|m)\b|\bfeminazi", "feminists", "Women"),
    (r"\bwomen\b|\bfemales?\b|\bgirls\b|\bbitch|\bwhores?\b|\bsluts?\b", "women", "Women"),
    (r"\bautis", "autistic people", "Disabled"),
    (r"\blearning (?:difficult|disabilit)|\bintellectual(?:ly)? disab|\bmentally (?:disabled|handicapped|retarded)",
     "people with learning disabilities", "Disabled"),
    (r"\bmental(?:ly)? ill", "people with mental illness", "Disabled"),
    (r"\bretard|\bdisabled\b|\bdisabilit|\bcripple|\bdown'?s? syndrome", "disabled people", "Disabled"),
    (r"\bfat (?:people|folks?|women|men)\b|\bobese\b|\boverweight\b", "overweight people", "Others"),
    (r"\bhomeless\b", "homeless people", "Others"),
]
# Political sides name the people only when nothing else does (the analyst's label included): Gab
# posts often jab at the left on the way to their real target.
SIDES = [
    (r"\bliberals?\b|\bleftists?\b|\blefties\b|\bdemocrats?\b|\bsocialists?\b|\bsjws?\b"
     r"|\bsocial justice warriors?\b|\bprogressives\b", "people on the left", "Political group"),
    (r"\bconservatives\b|\brepublicans?\b|\bright-wingers?\b|\btrump supporters\b", "people on the right",
     "Political group"),
]


def people_and_group(target_group: str, post: str) -> tuple[str, str]:
    """The neutral name of the people `post` attacks (for `{people}`) and the label whose blocks
    fit them. The post's own words decide when they name a group: the analyst's label when the
    post names it (with the more exact name the post uses: refugees, trans people), else the first
    group of NAMED the post names (the 1.5B's label is often a neighbour's: "People of color" for a
    post about people with learning difficulties). A post that names no group (in-groups such as
    whites or Christians are left out of NAMED on purpose) keeps the analyst's label, or, when that
    label is a catch-all, the political side it names (SIDES) or the people its slur names."""
    named = [(name, label) for pattern, name, label in NAMED if re.search(pattern, post, re.IGNORECASE)]
    same = [(name, label) for name, label in named if label == target_group]
    if same or named:
        return (same or named)[0]
    if target_group in TARGET_PEOPLE and target_group not in CATCH_ALL:
        return TARGET_PEOPLE[target_group], target_group
    if sides := [(name, label) for pattern, name, label in SIDES if re.search(pattern, post, re.IGNORECASE)]:
        return sides[0]
    slur = slur_used(post)
    return (people_plural(slur) if slur else TARGET_PEOPLE.get(target_group, UNNAMED)), target_group


@dataclass
class Composed:
    text: str
    match: BlockMatch  # the block it is made of
    people: str
    group: str  # the target group label the blocks were chosen for
    score: float  # the closest block's match: cosine (+ the category bonus when its category fits)
    answers: bool  # the first block answers the claim (cosine >= ANSWERS); else a fallback stands in

    def why(self) -> str:
        block = self.match.block
        if block.language != "en":
            return f"the {block.language} fallback {block.id} (blocks are matched to claims in English only)"
        if self.answers:
            return f"block {block.id} ({block.kind}) answers \"{self.match.answered}\" (match {self.match.similarity:.2f})"
        return f"no block answers the claim closely (best score {self.score:.2f}): fallback {block.id}"


def _score(match: BlockMatch, category: HateType) -> float:
    return match.similarity + (CATEGORY_BONUS if category in match.block.categories else 0.0)


def _ranked(library: BlockLibrary, post: str, target_group: str, category: HateType):
    """The people, their group label and the fitting blocks, best score first."""
    people, group = people_and_group(target_group, post)
    ranked = sorted(library.matches(post, group), key=lambda m: -_score(m, category))
    if people == UNNAMED:  # a generic block would name nobody: blocks written for the group or naming no one
        ranked = [m for m in ranked if not m.block.generic or not m.block.names_people]
    else:  # the fallbacks that name nobody are for posts that name no group
        ranked = [m for m in ranked if not m.block.unnamed_fallback]
    # "Calling them vermin ..." under a post that never said vermin rebuts what it did not say.
    return people, group, [m for m in ranked if not unsaid_label(m.block.render(people), post)]


def _zh(library: BlockLibrary, post: str, target_group: str, category: HateType) -> Composed | None:
    block = fallback_zh(library, category)
    if block is None:
        return None
    people = people_zh(target_group, post)
    return Composed(block.render(people), BlockMatch(block, 0.0, ""), people, target_group, 0.0, False)


def compose(library: BlockLibrary, post: str, target_group: str, category: HateType) -> Composed | None:
    """The best-matching block for the post; the category's fallback when nothing answers; None
    when the library has neither. A Chinese post gets the category's Chinese fallback (compose_zh)."""
    if language(post) == "zh":
        return _zh(library, post, target_group, category)
    people, group, ranked = _ranked(library, post, target_group, category)
    best = _score(ranked[0], category) if ranked else 0.0
    answering = [m for m in ranked if m.similarity >= ANSWERS]
    fallbacks = [m for m in ranked if m.block.fallback and category in m.block.categories]
    first = answering[0] if answering else fallbacks[0] if fallbacks else None
    if first is None:
        return None
    return Composed(first.block.render(people), first, people, group, best, bool(answering))


def compose_candidates(library: BlockLibrary, post: str, target_group: str, category: HateType,
                       k: int) -> list[Composed]:
    """The rivals the reply ranker weighs (fire/candidates.py): up to `k` blocks that answer the
    claim (cosine >= ANSWERS), closest first, and the category's fallback; each scored by its own
    match. The closest block by cosine often rebuts a neighbouring claim (graded dev replies,
    fire_blocks.md). A Chinese post: its category's Chinese fallback alone."""
    if language(post) == "zh":
        return [made] if (made := _zh(library, post, target_group, category)) else []
    people, group, ranked = _ranked(library, post, target_group, category)
    answering = [m for m in ranked if m.similarity >= ANSWERS and not m.block.fallback][:k]
    fallback = [m for m in ranked if m.block.fallback and category in m.block.categories][:1]
    return [Composed(m.block.render(people), m, people, group, _score(m, category), m in answering)
            for m in answering + fallback]
