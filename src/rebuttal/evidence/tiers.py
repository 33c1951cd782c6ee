"""Source tiers for web results, by domain.

institutional: governments, intergovernmental bodies, national statistics offices, universities,
    academies and peer-reviewed publishers.
mainstream: encyclopaedias, major news organisations, fact-checkers, established NGOs.
social: user-generated platforms (kept, ranked last: a reviewer should not see a tweet cited
    as a source before a statistics office).
low: hyper-partisan outlets, conspiracy sites, extremist forums and content farms (dropped).

Unknown domains are labelled mainstream but rank after known mainstream domains
(`TierInfo.known` is False): labelling them low would drop most of the long tail of honest
local news and NGO pages, and labelling them institutional would overstate them. The lists
are a starting point; pass `extra` to override or extend them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

from rebuttal.types import SourceTier

# Public-sector and academic suffixes (matched as the end of the host name).
INSTITUTIONAL_SUFFIXES = (
    "gov", "mil", "edu", "int", "europa.eu",
    "gov.uk", "ac.uk", "nhs.uk", "police.uk", "parliament.uk",
    "gov.au", "edu.au", "gc.ca", "gov.ie", "gov.nz", "ac.nz", "govt.nz", "gov.in", "ac.in",
    "gov.za", "ac.za", "go.jp", "ac.jp", "gov.sg", "edu.sg", "gouv.fr", "bund.de", "admin.ch",
    "ac.il", "gov.il", "edu.cn", "gov.cn", "gob.es", "gov.it", "overheid.nl", "government.nl",
)

INSTITUTIONAL_DOMAINS = frozenset({
    # UN system and other international bodies (those not under .int)
    "un.org", "unhcr.org", "unesco.org", "unicef.org", "unwomen.org", "ohchr.org", "ilo.org",
    "unodc.org", "undp.org", "unfpa.org", "worldbank.org", "imf.org", "oecd.org", "wto.org",
    "icrc.org", "osce.org", "unaids.org", "ipcc.ch",
    # national statistics offices and public research bodies outside the suffixes above
    "destatis.de", "insee.fr", "istat.it", "cbs.nl", "scb.se", "ssb.no", "dst.dk", "ine.es",
    "statistik.at", "cso.ie", "stats.govt.nz", "stats.gov.cn", "ibge.gov.br", "inegi.org.mx",
    "ined.fr", "bfs.admin.ch", "rki.de", "inserm.fr", "cnrs.fr", "mpg.de", "nationalacademies.org",
    "royalsociety.org", "pewresearch.org", "rand.org", "nber.org", "migrationpolicy.org",
    "ushmm.org", "yadvashem.org", "annefrank.org", "cochrane.org", "cochranelibrary.com",
    # peer-reviewed publishers, journals and scholarly indexes
    "nature.com", "science.org", "sciencemag.org", "cell.com", "thelancet.com", "bmj.com",
    "nejm.org", "jamanetwork.com", "pnas.org", "plos.org", "springer.com", "springeropen.com",
    "wiley.com", "tandfonline.com", "sagepub.com", "sciencedirect.com", "elsevier.com",
    "oup.com", "cambridge.org", "jstor.org", "frontiersin.org", "mdpi.com", "apa.org",
    "annualreviews.org", "biomedcentral.com", "doi.org", "arxiv.org", "ssrn.com", "nih.gov",
    "psycnet.apa.org", "europepmc.org", "scholar.archive.org", "semanticscholar.org",
})

MAINSTREAM_DOMAINS = frozenset({
    # reference works
    "wikipedia.org", "britannica.com", "wikimedia.org", "ourworldindata.org", "statista.com",
    # international and national news organisations
    "reuters.com", "apnews.com", "afp.com", "bbc.co.uk", "bbc.com", "npr.org", "pbs.org",
    "nytimes.com", "washingtonpost.com", "wsj.com", "ft.com", "economist.com", "bloomberg.com",
    "theguardian.com", "independent.co.uk", "telegraph.co.uk", "thetimes.co.uk", "sky.com",
    "cnn.com", "nbcnews.com", "cbsnews.com", "abcnews.go.com", "usatoday.com", "latimes.com",
    "time.com", "theatlantic.com", "newyorker.com", "politico.com", "politico.eu", "axios.com",
    "aljazeera.com", "dw.com", "france24.com", "euronews.com", "lemonde.fr", "spiegel.de",
    "zeit.de", "faz.net", "elpais.com", "corriere.it", "cbc.ca", "abc.net.au", "smh.com.au",
    "irishtimes.com", "rte.ie", "haaretz.com", "timesofisrael.com", "thehindu.com", "scmp.com",
    "japantimes.co.jp", "scientificamerican.com", "newscientist.com",
    "theconversation.com", "vox.com", "propublica.org", "csmonitor.com", "voanews.com",
    # fact-checkers (IFCN signatories and similar)
    "snopes.com", "factcheck.org", "politifact.com", "fullfact.org", "leadstories.com",
    "healthfeedback.org", "sciencefeedback.co", "correctiv.org", "maldita.es", "newtral.es",
    "pagellapolitica.it", "africacheck.org", "boomlive.in", "altnews.in", "logically.ai",
    "checkyourfact.com", "truthorfiction.com", "mediawise.org",
    # established human-rights and anti-discrimination organisations
    "amnesty.org", "hrw.org", "adl.org", "splcenter.org", "stonewall.org.uk", "glaad.org",
    "hrc.org", "naacp.org", "refugeecouncil.org.uk", "rescue.org", "msf.org", "redcross.org",
})

SOCIAL_DOMAINS = frozenset({
    "reddit.com", "x.com", "twitter.com", "facebook.com", "fb.com", "instagram.com",
    "youtube.com", "youtu.be", "tiktok.com", "quora.com", "pinterest.com", "tumblr.com",
    "linkedin.com", "threads.net", "bsky.app", "mastodon.social", "t.me", "telegram.org",
    "vk.com", "discord.com", "snapchat.com", "twitch.tv", "medium.com", "substack.com",
    "blogspot.com", "wordpress.com", "stackexchange.com", "stackoverflow.com", "weibo.com",
    "douban.com", "zhihu.com", "answers.yahoo.com", "tripadvisor.com", "fandom.com",
})

LOW_QUALITY_DOMAINS = frozenset({
    # conspiracy, pseudo-science and fabricated-news sites
    "infowars.com", "naturalnews.com", "beforeitsnews.com", "newspunch.com", "yournewswire.com",
    "globalresearch.ca", "activistpost.com", "veteranstoday.com", "davidicke.com",
    "henrymakow.com", "thegatewaypundit.com", "zerohedge.com", "theonion.com",  # (satire is not evidence)
    "worldtruth.tv", "collective-evolution.com", "wakingtimes.com", "humansarefree.com",
    "childrenshealthdefense.org", "mercola.com", "thetruthaboutcancer.com",
    # state disinformation outlets
    "rt.com", "sputniknews.com", "sputnikglobe.com", "presstv.ir", "tass.com",
    # hyper-partisan outlets (both directions)
    "breitbart.com", "occupydemocrats.com", "palmerreport.com", "bipartisanreport.com",
    "dailykos.com", "thenewamerican.com", "frontpagemag.com", "jihadwatch.org",
    "gellerreport.com", "pamelageller.com", "winningdemocrats.com", "americannews.com",
    # white-supremacist, antisemitic and other extremist sites and forums
    "stormfront.org", "dailystormer.su", "dailystormer.in", "dailystormer.name", "vdare.com",
    "amren.com", "unz.com", "counter-currents.com", "theoccidentalobserver.net",
    "renegadetribune.com", "nationalvanguard.org", "occidentaldissent.com", "gab.com",
    "4chan.org", "4channel.org", "8kun.top", "bitchute.com", "kiwifarms.net", "kiwifarms.st",
    "metapedia.org", "rightpedia.info", "voat.co", "patriots.win",
    # content farms and answer mills
    "answers.com", "ehow.com", "hubpages.com", "ezinearticles.com",
    "knoji.com", "articlesbase.com",
})

TIER_ORDER = {SourceTier.institutional: 0, SourceTier.mainstream: 1, SourceTier.social: 2,
              SourceTier.low: 3}


class TierInfo(NamedTuple):
    tier: SourceTier
    known: bool  # False when the domain matched no list (ranked after known ones)
    domain: str


def host_of(url: str) -> str:
    """Lower-case host without port or a leading www./m./mobile. prefix ('' if unparsable)."""
    try:
        host = urlsplit(url.strip()).hostname or ""
    except ValueError:
        return ""
    host = host.lower().rstrip(".")
    for prefix in ("www.", "m.", "mobile.", "amp."):
        if host.startswith(prefix):
            host = host[len(prefix):]
    return host


def _matches(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


def classify_url(url: str, extra: Mapping[str, SourceTier | str] | None = None) -> TierInfo:
    """The tier of a result's domain. `extra` maps domains to tiers and wins over the lists;
    the most specific (longest) matching domain decides, so answers.yahoo.com is social."""
    host = host_of(url)
    if not host:
        return TierInfo(SourceTier.low, True, "")  # no usable link: not citable
    candidates: list[tuple[str, SourceTier]] = []
    for domain, tier in (extra or {}).items():
        if _matches(host, domain.lower()):
            candidates.append((domain, SourceTier(tier)))
    if not candidates:
        for tier, domains in ((SourceTier.low, LOW_QUALITY_DOMAINS),
                              (SourceTier.social, SOCIAL_DOMAINS),
                              (SourceTier.institutional, INSTITUTIONAL_DOMAINS),
                              (SourceTier.mainstream, MAINSTREAM_DOMAINS)):
            candidates += [(d, tier) for d in domains if _matches(host, d)]
    if candidates:
        _, tier = max(candidates, key=lambda c: len(c[0]))
        return TierInfo(tier, True, host)
    if any(_matches(host, suffix) for suffix in INSTITUTIONAL_SUFFIXES):
        return TierInfo(SourceTier.institutional, True, host)
    return TierInfo(SourceTier.mainstream, False, host)


def classify_domain(url_or_host: str) -> SourceTier:
    """Shorthand: the tier only; accepts a bare host name too."""
    text = url_or_host if "://" in url_or_host else f"https://{url_or_host}"
    return classify_url(text).tier
