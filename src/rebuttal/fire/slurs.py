"""Slurs: finding one a text uses in its own voice, and naming the people instead.

The 1.5B model echoes a post's slur in its reply ("The n... is not worthless"): in the blind
grades of held-out FIRE drafts, 14 of 71 harmful replies used the post's slur in their own
voice. The slur check (coherence.slur_problem) flags that. Showing the generator the post with
each slur replaced by the people it names (`name_the_people`, `FireSettings.name_the_people`)
stopped the echo but made replies worse (the model conceded the de-slurred claim): an option,
off (benchmarks/results/fire_slurs.md).
"""

from __future__ import annotations

import re

# Slurs and gendered insults seen in hate posts; a reply that uses one in its own voice insults the
# people it defends. A quoted word or a mention ("don't call them X", "words like X", "slurs such as
# X") passes; "use" is no mention word ("homeowners who use beaner labor" is the slur in the reply's
# own voice). Identity words (gay, Jew, gypsy) are not here. Each stem names its people: one, many.
PEOPLE = {
    r"nigg(?:er|a)|coon": ("Black person", "Black people"),
    r"kike": ("Jewish person", "Jewish people"),
    r"spic|wetback|beaner": ("Latino", "Latinos"),
    r"chink|gook": ("Asian person", "Asian people"),
    r"towelhead|raghead": ("Muslim", "Muslims"),
    r"paki": ("Pakistani", "Pakistanis"),
    r"gyppo": ("Roma person", "Roma"),
    r"fag(?:got)?": ("gay man", "gay men"),
    r"dyke": ("lesbian", "lesbians"),
    r"trann(?:y|ie)|shemale": ("trans woman", "trans women"),
    r"retard|mongoloid|spastic": ("disabled person", "disabled people"),
    r"bitch|whore|slut|cunt|skank": ("woman", "women"),
    r"feminazi": ("feminist", "feminists"),
    r"libtard": ("liberal", "liberals"),
}
STEMS = [re.compile(rf"^(?:{stem})", re.IGNORECASE) for stem in PEOPLE]
SLUR = re.compile(
    r"\b(?:fag(?:got)?s?|dykes?|trann(?:y|ies)|shemales?|retard(?:s|ed)?|mongoloids?|spastics?"
    r"|nigg(?:er|a)s?|coons?|kikes?|spics?|chinks?|gooks?|wetbacks?|beaners?|towelheads?|ragheads?"
    r"|pakis?|gyppos?|bitch(?:es)?|whores?|sluts?|cunts?|skanks?|feminazis?|libtards?)\b(?!-)",
    re.IGNORECASE,
)
QUOTED = re.compile(r"[\"“'‘][^\"”’\n]{1,60}?[\"”'’]")
MENTION = re.compile(r"(?:\b(?:say|saying|said|call|calling|called|word|words|term|terms)\W+(?:\w+\W+){0,2}"
                     r"|\b(?:slurs?|insults?|names?|labels?)\s+(?:like|such\s+as)\W+)$", re.IGNORECASE)
ARTICLE_SLUR = re.compile(rf"\b(?:(an?)\s+)?({SLUR.pattern})", re.IGNORECASE)


def slur_used(text: str) -> str | None:
    """The first slur `text` uses in its own voice (not quoted, not mentioned), if any."""
    unquoted = QUOTED.sub(" ", text)
    for found in SLUR.finditer(unquoted):
        if not MENTION.search(unquoted[max(0, found.start() - 40):found.start()]):
            return found.group(0)
    return None


def _people(slur: str) -> tuple[str, str]:
    return next(people for stem, people in zip(STEMS, PEOPLE.values()) if stem.match(slur))


def people_named(slur: str) -> str:
    """What to call the people `slur` names ("niggas" -> "Black people", "retarded" -> "disabled")."""
    if slur.lower() == "retarded":
        return "disabled"
    one, many = _people(slur)
    return many if slur.lower().endswith("s") else one


def people_plural(slur: str) -> str:
    """The people `slur` names, always plural ("kike" -> "Jewish people", "retarded" -> "disabled people")."""
    return _people(slur)[1]


def name_the_people(text: str) -> tuple[str, int]:
    """`text` with every slur (quoted or not) replaced by the people it names, and how many were."""
    count = 0

    def replace(found: re.Match) -> str:
        nonlocal count
        count += 1
        article, slur = found.group(1), found.group(2)
        people = people_named(slur)
        if slur[0].isupper() and not article:
            people = people[0].upper() + people[1:]
        if article:
            an = "an" if people[0].lower() in "aeiou" else "a"
            people = f"{an.capitalize() if article[0].isupper() else an} {people}"
        return people

    return ARTICLE_SLUR.sub(replace, text), count
