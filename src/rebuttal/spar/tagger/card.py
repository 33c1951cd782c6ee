"""MODEL_CARD.md next to trained tagger weights: data, split, licence, training, scores."""

from __future__ import annotations

import json
from pathlib import Path

from rebuttal.spar.tagger.core import CONFIG

LICENCES = {
    "zh": "STATE-ToxiCN (shenmeyemeifashengguo/STATE-ToxiCN) is licensed for research only, no "
          "commercial use; these weights are derived from it and inherit that restriction: use them for "
          "research and non-commercial moderation support. No post is stored (config.json keeps a "
          "vocabulary of the characters and character pairs seen at least twice); the slang lexicon's "
          "terms are kept only as hashes, enough to recognise a term, not to read one.",
    "en": "TBO (LanguageTechnologyLab/TBO) states no licence, so the rights of models trained on it are "
          "unclear; no post text is stored in these weights. Use them for research and non-commercial "
          "moderation support, or retrain on data you hold.",
}


def _options(config: dict) -> str:
    """The non-default `rebuttal spar train` options this tagger was trained with."""
    parts = []
    if config["kind"] == "char":
        if config["track"] == "en-main":
            parts.append("--kind char")
        encoder = str(config.get("encoder", "bilstm"))
        if encoder.startswith("cnn"):
            parts.append("--encoder cnn")
        if "bigrams" not in encoder:
            parts.append("--no-bigrams")
        if "word positions" not in encoder:
            parts.append("--no-words")
        if config.get("lexicon"):
            parts.append(f"--lexicon <{config['lexicon']}>")
        if not config.get("init"):
            parts.append("--vectors none")
        if config["featurizer"].get("context_model"):
            parts.append(f"--context {config['featurizer']['context_model']}")
            if config["featurizer"].get("context_layers"):
                parts.append(f"--context-layers {config['featurizer']['context_layers']}")
    epochs = config.get("training", {}).get("epochs")
    if epochs and not config.get("ensemble"):  # an ensemble's members give their own
        parts.append(f"--epochs {epochs}")
    return "".join(" " + p for p in parts)


def _init_lines(init: dict | None, context: str | None, layers: int | None = None) -> list[str]:
    lines = []
    if context:
        which = f"the hidden states after layer {layers}" if layers else "the last hidden states"
        lines.append(f"- contextual feature: {which} of {context} (llama.cpp embedding mode), "
                     "computed for every post at parse time (one forward pass, ~0.2-0.4 s a post on 2 threads): "
                     "that GGUF must be installed wherever this tagger runs (Qwen2.5-Coder is Apache-2.0).")
    if not init:
        return lines
    return lines + [f"- start vectors: {init['chars']} characters and {init['bigrams']} character pairs from the input "
            f"token embeddings of {init['vectors_from']} ({init['width']} wide, PCA-reduced, then trained). "
            "Qwen2.5-Coder-1.5B-Instruct is Apache-2.0; the data's licence below is the binding one."]


def _ensemble_lines(ensemble: dict | None) -> list[str]:
    if not ensemble:
        return []
    members = "; ".join(f"init seed {m['init_seed']}: best epoch {m['best_epoch']}/{m['epochs']}, "
                        f"validation {m['val_f1']} (decoded {m['val_decode_score']})" for m in ensemble["members"])
    return [f"- an ensemble of {len(ensemble['members'])} members trained like the first (above) from different "
            f"init seeds (weights and batch order), read as the mean of their log-probabilities: {members}",
            f"- the ensemble's validation score, decoded: {ensemble['val_score']}"]


def _retrain_lines(config: dict) -> list[str]:
    train = f"rebuttal spar train --track {config['track']} --data <gold file>{_options(config)}"
    ensemble = config.get("ensemble")
    if not ensemble:
        return ["- Retrain (on data you hold, or with other settings) with one command:",
                f"  `{train} --out <folder>`", ""]
    members = ensemble["members"]
    return ["- Retrain (on data you hold, or with other settings): one training per member, then the ensemble:",
            *[f"  `{train} --epochs {m['epochs']} --init-seed {m['init_seed']} --out member{k}`"
              for k, m in enumerate(members)],
            f"  `rebuttal spar ensemble {' '.join(f'member{k}' for k in range(len(members)))} --data <gold file> "
            "--out <folder>`", ""]


def write_card(folder: str | Path) -> Path:
    folder = Path(folder)
    config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    lang = "en" if config["track"] == "en-main" else "zh"
    split, training = config.get("split", {}), config.get("training", {})
    lines = [
        f"# SPAR span tagger · {config['track']} · {config['kind']}", "",
        "Tags target and argument spans (two BIO layers), then pairs each argument with a target "
        "(overlapping, else nearest before, else nearest after, or NULL when its implicit-target "
        "head says so) and labels it (harmful head; Chinese: group head, non-hate = not hateful). "
        "Every output span is a slice of the post.", "",
        "## Model",
        f"- kind: {config['kind']}; encoder: {config.get('encoder')}"
        + (f"; lexicon feature from {config['lexicon']}" if config.get("lexicon") else ""),
        f"- groups: {' | '.join(config['groups']) or '(none: three-field track)'}",
        *_init_lines(config.get("init"), config["featurizer"].get("context_model"),
                     config["featurizer"].get("context_layers")), "",
        "## Data and split",
        f"- trained on `{config.get('data')}` (the shared gold training file, as it is)",
        f"- split seed {split.get('seed')}: {split.get('train')} train / {split.get('val')} validation "
        f"(epoch choice) / {split.get('dev')} dev (held out for evaluation; ids in config.json)",
        "- nothing was chosen on any test split", "",
        "## Training",
        f"- {'first member: ' if config.get('ensemble') else ''}epochs {training.get('epochs')}, best epoch {training.get('best_epoch')}, lr {training.get('lr')}, "
        f"batch {training.get('batch_size')}, {training.get('threads')} CPU thread(s), "
        f"{training.get('train_seconds')} s",
        f"- validation score at the chosen epoch: {training.get('val_f1')} "
        f"({training.get('val_metric', 'exact (target, argument, label) F1')})",
        *_ensemble_lines(config.get("ensemble")),
        f"- decoding options chosen on validation: {config.get('decode', 'defaults')}", "",
        "## Licence and shipping",
        f"- {LICENCES[lang]}",
        *_retrain_lines(config),
    ]
    scores = config.get("scores")
    if scores:
        lines += ["## Scores (project scorers, dev split above)", ""]
        lines += [f"- {name}: {value}" for name, value in scores.items()]
        lines.append("")
    path = folder / "MODEL_CARD.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def record_scores(folder: str | Path, scores: dict[str, str]) -> Path:
    """Store evaluation results in config.json and rewrite the card with them."""
    folder = Path(folder)
    config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    config["scores"] = {**config.get("scores", {}), **scores}
    (folder / CONFIG).write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")
    return write_card(folder)
