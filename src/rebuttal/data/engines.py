"""Where a batch runs: here (`run_batch`, threads) or on Ray (`run_ray`, actors). Both write
rows through `batch.row_for`, so they cannot drift; this module only dispatches, which keeps
batch.py and ray_runner.py free of imports of each other's callers."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from rebuttal.data.batch import ENGINES, BatchItem, BatchSummary, ProcessFactory, run_batch


def run_rows(
    source: Iterable[BatchItem | tuple[str, str]],
    factory: ProcessFactory,
    output: Path,
    *,
    engine: Literal["local", "ray"] = "local",
    ray: Any = None,
    concurrency: int = 1,
    retry_errors: bool = False,
    progress: bool = True,
) -> BatchSummary:
    """Run on the chosen engine: `local` builds the work once here (`factory()`) and runs
    `run_batch`; `ray` sends `factory` to each actor (`ray`: a `RayOptions`)."""
    if engine == "local":
        return run_batch(source, factory(), output, concurrency=concurrency,
                         retry_errors=retry_errors, progress=progress)
    if engine == "ray":
        from rebuttal.data.ray_runner import run_ray

        return run_ray(source, factory, output, options=ray, concurrency=concurrency,
                       retry_errors=retry_errors, progress=progress)
    raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
