import hashlib
import sys

import pytest

from rebuttal.llm import registry


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """Three fake part packages on sys.path and a registry entry pinned to their join."""
    site = tmp_path / "site"
    chunks = [b"GGUF-part-one|", b"part-two|", b"part-three"]
    names = []
    for i, chunk in enumerate(chunks, 1):
        pkg = site / f"fakepart{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise RuntimeError('part code must never run')\n")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        names.append(f"fakepart{i}")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv(registry.CACHE_ENV, str(tmp_path / "cache"))
    joined = b"".join(chunks)
    model = registry.EmbeddedModel(
        name="fake", description="", packages=tuple(names), pattern="data/part*.bin",
        filename="fake.gguf", sha256=hashlib.sha256(joined).hexdigest(), size=len(joined),
        licence="test",
    )
    monkeypatch.setitem(registry.MODELS, "fake", model)
    return model, joined


def test_assembles_parts_in_order_and_verifies(fake_model):
    model, joined = fake_model
    path = registry.model_path("fake")
    assert path.read_bytes() == joined
    assert registry.is_verified(model, path)
    assert "fakepart1" not in sys.modules  # located, never imported
    status = registry.check("fake")
    assert status.installed and status.assembled and status.hash_ok and status.problem is None


def test_verified_file_is_not_reassembled(fake_model, monkeypatch):
    registry.model_path("fake")
    monkeypatch.setattr(registry, "part_files", lambda m: pytest.fail("re-assembled"))
    assert registry.model_path("fake").exists()


def test_hash_mismatch_is_clear_and_leaves_nothing(fake_model, monkeypatch):
    model, _ = fake_model
    bad = registry.EmbeddedModel(**{**model.__dict__, "sha256": "0" * 64})
    monkeypatch.setitem(registry.MODELS, "fake", bad)
    with pytest.raises(registry.ModelRegistryError, match="SHA-256 mismatch.*force-reinstall"):
        registry.model_path("fake")
    assert list(registry.cache_dir().iterdir()) == []  # no half-written or unverified file


def test_missing_part_names_the_install_command(fake_model, monkeypatch):
    model, _ = fake_model
    missing = registry.EmbeddedModel(**{**model.__dict__, "packages": (*model.packages, "nopart9")})
    monkeypatch.setitem(registry.MODELS, "fake", missing)
    with pytest.raises(registry.ModelRegistryError, match="nopart9 is not installed; fix: pip install"):
        registry.model_path("fake")
    assert registry.check("fake").installed is False


def test_unknown_model_lists_known_ones():
    with pytest.raises(registry.ModelRegistryError, match="known: qwen2.5-1.5b"):
        registry.get_model("gpt-17")
