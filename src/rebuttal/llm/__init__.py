"""The LLM layer: one ChatModel interface, thin backends imported lazily."""

from rebuttal.llm.base import (
    ChatModel,
    Completion,
    LLMError,
    Message,
    MissingBackend,
    StructuredOutputError,
    extract_json,
)
from rebuttal.llm.factory import BACKENDS, Backend, ModelSettings, load_model
from rebuttal.llm.structured import StructuredResult, generate_object, generate_objects

__all__ = [
    "BACKENDS", "Backend", "ChatModel", "Completion", "LLMError", "Message", "MissingBackend",
    "ModelSettings", "StructuredOutputError", "StructuredResult", "extract_json",
    "generate_object", "generate_objects", "load_model",
]
