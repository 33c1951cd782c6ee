"""The transformers backend on a tiny random model built here (no weights are downloaded)."""

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    from rebuttal.llm.embeddings import minilm_path

    folder = tmp_path_factory.mktemp("tiny-causal-lm")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(minilm_path()))  # any local vocabulary
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    tokenizer.save_pretrained(folder)
    config = transformers.GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=2, n_positions=256)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def test_greedy_generation_through_the_chat_template(tiny_model_dir):
    from rebuttal.llm.transformers_backend import TransformersModel

    model = TransformersModel(str(tiny_model_dir), device="cpu", dtype="float32")
    messages = [{"role": "user", "content": "hello there"}]
    first = model.generate(messages, max_tokens=6)
    second = model.generate(messages, max_tokens=6)
    assert first.text == second.text  # temperature 0 is greedy, so repeatable
    assert first.usage.completion_tokens == 6 and first.usage.prompt_tokens > 3
    assert first.model == str(tiny_model_dir)
