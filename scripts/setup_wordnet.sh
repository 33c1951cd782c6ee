#!/usr/bin/env bash
# Lay out WordNet 3.0 as an NLTK `corpora/wordnet` folder for METEOR, fully offline.
#
# WordNet cannot be downloaded through nltk.download() here, so it comes from Debian's
# `wordnet-base` (data/index/exception files) and `wordnet-sense-index` (index.sense)
# packages. NLTK also needs a `lexnames` file that Debian does not ship; it is generated
# from WordNet 3.0's fixed list of 45 lexicographer files.
#
# Usage: scripts/setup_wordnet.sh [DATA_DIR]
#   DATA_DIR defaults to $REBUTTAL_HOME/nltk_data, else ~/.local/share/rebuttal/nltk_data.
#   The evaluation code adds the same default folder to nltk.data.path.
set -euo pipefail

if [[ $# -ge 1 ]]; then
  DATA_DIR="$1"
elif [[ -n "${REBUTTAL_HOME:-}" ]]; then
  DATA_DIR="$REBUTTAL_HOME/nltk_data"
else
  DATA_DIR="$HOME/.local/share/rebuttal/nltk_data"
fi
SRC=/usr/share/wordnet
TARGET="$DATA_DIR/corpora/wordnet"

if [[ ! -f "$SRC/data.noun" || ! -f "$SRC/index.sense" ]]; then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  # Another apt process may hold the lock (CI images, parallel set-up): wait for it.
  APT=(apt-get -o DPkg::Lock::Timeout=600 -y -q)
  if ! apt-cache show wordnet-base >/dev/null 2>&1 || ! apt-cache show wordnet-sense-index >/dev/null 2>&1; then
    $SUDO "${APT[@]}" update
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO "${APT[@]}" install --no-install-recommends \
    wordnet-base wordnet-sense-index
fi

for f in data.noun data.verb data.adj data.adv index.noun index.verb index.adj index.adv \
         noun.exc verb.exc adj.exc adv.exc index.sense; do
  if [[ ! -f "$SRC/$f" ]]; then
    echo "error: $SRC/$f is missing after installing wordnet-base and wordnet-sense-index" >&2
    exit 1
  fi
done

mkdir -p "$TARGET"
for f in "$SRC"/*; do
  name=$(basename "$f")
  [[ -f "$f" ]] && cp -f "$f" "$TARGET/$name"
done

# WordNet 3.0 lexicographer files: number, name, syntactic category (1 noun, 2 verb,
# 3 adjective, 4 adverb), as in WordNet's lexnames(5WN). NLTK checks the numbering.
cat > "$TARGET/lexnames" <<'EOF'
00	adj.all	3
01	adj.pert	3
02	adv.all	4
03	noun.Tops	1
04	noun.act	1
05	noun.animal	1
06	noun.artifact	1
07	noun.attribute	1
08	noun.body	1
09	noun.cognition	1
10	noun.communication	1
11	noun.event	1
12	noun.feeling	1
13	noun.food	1
14	noun.group	1
15	noun.location	1
16	noun.motive	1
17	noun.object	1
18	noun.person	1
19	noun.phenomenon	1
20	noun.plant	1
21	noun.possession	1
22	noun.process	1
23	noun.quantity	1
24	noun.relation	1
25	noun.shape	1
26	noun.state	1
27	noun.substance	1
28	noun.time	1
29	verb.body	2
30	verb.change	2
31	verb.cognition	2
32	verb.communication	2
33	verb.competition	2
34	verb.consumption	2
35	verb.contact	2
36	verb.creation	2
37	verb.emotion	2
38	verb.motion	2
39	verb.perception	2
40	verb.possession	2
41	verb.social	2
42	verb.stative	2
43	verb.weather	2
44	adj.ppl	3
EOF

lines=$(wc -l < "$TARGET/lexnames")
if [[ "$lines" -ne 45 ]]; then
  echo "error: generated lexnames has $lines lines, expected 45" >&2
  exit 1
fi
echo "WordNet laid out for NLTK in $TARGET"
