"""Hugging Face transformers backend, for GPU users with local weights (e.g. Qwen3-1.7B)."""

from __future__ import annotations

from rebuttal.llm.base import ChatModel
from rebuttal.optional import require
from rebuttal.types import Usage


class TransformersModel(ChatModel):
    """Greedy decoding through the model's chat template, as in the FIRE paper (temperature 0,
    at most 512 new tokens). No constrained decoding here: structured calls rely on the
    validate-and-re-ask loop. Qwen3's thinking mode is switched off in the template."""

    def __init__(self, model_id_or_path: str, *, device: str | None = None, dtype: str = "auto"):
        transformers = require("transformers", "transformers")
        torch = require("torch", "transformers")
        self.name = model_id_or_path
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(model_id_or_path)
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            model_id_or_path, torch_dtype=dtype
        ).to(self.device)
        self.model.eval()

    def _complete(self, messages, *, json_schema, max_tokens, temperature, seed, stop):
        prompt = self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=True, enable_thinking=False
        )
        inputs = self.tokenizer(prompt, return_tensors="pt").to(self.device)
        self._torch.manual_seed(seed)
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        with self._torch.no_grad():
            output = self.model.generate(
                **inputs, max_new_tokens=max_tokens, stop_strings=stop, tokenizer=self.tokenizer,
                pad_token_id=self.tokenizer.eos_token_id, **sampling,
            )
        new_tokens = output[0][inputs["input_ids"].shape[1]:]
        text = self.tokenizer.decode(new_tokens, skip_special_tokens=True)
        return text, Usage(prompt_tokens=int(inputs["input_ids"].shape[1]), completion_tokens=len(new_tokens))
