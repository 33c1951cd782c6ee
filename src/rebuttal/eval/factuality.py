"""FSc judges: is a reply's factual content entailed by the gold evidence?

Two interchangeable judges return one label per (evidence, reply) pair, or None when the
judge could not decide (reported, never counted as a pass or a fail):
- `NLIFactJudge`: an NLI model (e.g. BART-MNLI) from a local folder through transformers,
  premise = evidence, hypothesis = reply.
- `LLMFactJudge`: any `ChatModel` with the fixed, versioned prompt `fact_check.v1`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from rebuttal.eval.judges import JudgeInfo
from rebuttal.llm.base import ChatModel, LLMError
from rebuttal.optional import require
from rebuttal.llm.prompts import load_prompt
from rebuttal.llm.structured import generate_object
from rebuttal.types import Usage

NLILabel = Literal["entailment", "neutral", "contradiction"]
MAX_CHARS = 4000  # longer texts are cut: the judge's context is small


class FactVerdict(BaseModel):
    # reason first: constrained decoding follows field order, so the model reasons, then labels
    reason: str = Field(default="", max_length=1000)
    label: NLILabel


class FactJudge(Protocol):
    @property
    def info(self) -> JudgeInfo: ...

    def judge(self, pairs: list[tuple[str, str]]) -> list[NLILabel | None]:
        """One label per (evidence, reply) pair; None when the judge failed on that pair."""


class LLMFactJudge:
    """A chat model as NLI judge with a fixed prompt (temperature 0, seed 0)."""

    def __init__(self, model: ChatModel, prompt_version: int | None = None):
        self.model = model
        self.prompt = load_prompt("rebuttal.eval", "fact_check", prompt_version)
        self.usage = Usage()
        self.errors: list[str] = []

    def judge(self, pairs: list[tuple[str, str]]) -> list[NLILabel | None]:
        labels: list[NLILabel | None] = []
        for evidence, reply in pairs:
            text = self.prompt.render(evidence=evidence[:MAX_CHARS], reply=reply[:MAX_CHARS])
            try:
                result = generate_object(self.model, [{"role": "user", "content": text}], FactVerdict,
                                         max_tokens=300)
            except LLMError as exc:  # includes StructuredOutputError: flagged, not counted
                self.errors.append(str(exc)[:300])
                labels.append(None)
                continue
            self.usage = self.usage + result.usage
            labels.append(result.value.label)
        return labels

    @property
    def info(self) -> JudgeInfo:
        return JudgeInfo(
            role="factuality", name=f"llm-judge:{self.model.name}", version=self.prompt.version,
            details="chat model as NLI judge (premise = gold evidence, hypothesis = reply), "
            "temperature 0, seed 0",
        )


class NLIFactJudge:
    """A local sequence-classification NLI model (labels named entailment/neutral/
    contradiction in its config), never downloaded."""

    def __init__(self, model_path: str | Path, batch_size: int = 8):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        transformers = require("transformers", "transformers")
        self.torch = require("torch", "transformers")
        self.path = Path(model_path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"NLI model folder not found: {self.path}")
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
        self.model = transformers.AutoModelForSequenceClassification.from_pretrained(
            str(self.path), local_files_only=True).eval()
        self.batch_size = batch_size
        self.labels: dict[int, NLILabel] = {}
        for index, name in self.model.config.id2label.items():
            lowered = str(name).lower()
            for label in ("entailment", "neutral", "contradiction"):
                if lowered.startswith(label[:7]):
                    self.labels[int(index)] = label
        if "entailment" not in self.labels.values():
            raise ValueError(f"{self.path} is not an NLI model: labels {self.model.config.id2label}")

    def judge(self, pairs: list[tuple[str, str]]) -> list[NLILabel | None]:
        labels: list[NLILabel | None] = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start:start + self.batch_size]
            encoded = self.tokenizer([e for e, _ in chunk], [r for _, r in chunk], truncation=True,
                                     padding=True, max_length=512, return_tensors="pt")
            with self.torch.no_grad():
                predicted = self.model(**encoded).logits.argmax(dim=-1).tolist()
            labels.extend(self.labels.get(int(i)) for i in predicted)
        return labels

    @property
    def info(self) -> JudgeInfo:
        return JudgeInfo(role="factuality", name=f"nli:{self.path.name}",
                         version=str(getattr(self.model.config, "_name_or_path", self.path.name)),
                         details="transformers NLI model, premise = gold evidence, hypothesis = reply")
