"""Prompts are versioned data files beside the agent that uses them: `prompts/<name>.v<N>.txt`.

Templates use `$name` placeholders (string.Template), so JSON braces need no escaping. The
version recorded in every trace is the file's stem, e.g. `analyst.v2`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from string import Template

_VERSIONED = re.compile(r"^(?P<name>.+)\.v(?P<version>\d+)\.txt$")


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str  # e.g. "analyst.v2"
    template: str

    def render(self, **values: object) -> str:
        return Template(self.template).substitute({k: str(v) for k, v in values.items()})


@lru_cache(maxsize=128)
def load_prompt(package: str, name: str, version: int | None = None) -> Prompt:
    """The newest (or the given) version of `name` in `<package>/prompts/`."""
    folder = resources.files(package) / "prompts"
    found: dict[int, str] = {}
    for entry in folder.iterdir():
        match = _VERSIONED.match(entry.name)
        if match and match["name"] == name:
            found[int(match["version"])] = entry.name
    if not found:
        raise FileNotFoundError(f"no prompt {name!r} in {package}/prompts")
    chosen = version if version is not None else max(found)
    if chosen not in found:
        raise FileNotFoundError(f"prompt {name!r} has no version {chosen}; have {sorted(found)}")
    text = (folder / found[chosen]).read_text(encoding="utf-8")
    return Prompt(name=name, version=f"{name}.v{chosen}", template=text)
