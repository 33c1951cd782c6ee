"""`rebuttal run --engine ray`: the batch run on Ray Data, with the local runner's rows.

The driver reads the input with the local runner's own functions (`read_rows`,
`items_from_rows`: same ids, same error rows for unusable lines) and drops the ids already in
the output (`pending`). Ray Data spreads the remaining entries over a pool of actors; each actor
calls the `factory` once (FIRE, a baseline or SPAR built once per actor) and turns every entry
into its row with `row_for`, the function the local runner calls. The driver appends each row to
the output JSONL as it arrives, so an interrupted run leaves complete rows (and at most one cut
line) and the next run resumes from them.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rebuttal import config
from rebuttal.data.batch import (BatchItem, BatchSummary, ProcessFactory, count_row, pending, row_for,
                                 row_line)
from rebuttal.optional import require

MAX_BLOCKS = 2000


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide a Ray run goes. `address=None` joins $REBUTTAL_RAY_ADDRESS or Ray's
    own RAY_ADDRESS when set, else starts a local instance bounded to `local_cpus` CPUs."""

    address: str | None = field(default_factory=config.ray_address)
    actors: int = config.DEFAULT_RAY_ACTORS
    cpus_per_actor: float = config.DEFAULT_RAY_CPUS_PER_ACTOR
    gpus_per_actor: float = config.DEFAULT_RAY_GPUS_PER_ACTOR
    batch_size: int = config.DEFAULT_RAY_BATCH_SIZE
    local_cpus: int = field(default_factory=config.ray_cpus)

    def __post_init__(self) -> None:
        if self.actors < 1 or self.batch_size < 1:
            raise ValueError("actors and batch size must be at least 1")
        if self.cpus_per_actor < 0 or self.gpus_per_actor < 0:
            raise ValueError("CPUs and GPUs per actor cannot be negative")


def encode_entry(entry: BatchItem | tuple[str, str]) -> dict[str, str]:
    """An entry as two strings (Arrow-friendly whatever the row's types)."""
    if isinstance(entry, tuple):
        return {"id": entry[0], "entry": json.dumps({"error": entry[1]}, ensure_ascii=False)}
    payload = {"text": entry.text, "fields": entry.fields}
    # ASCII: a lone surrogate in the text (JSON "\\ud800") stays escaped, so Arrow can hold it
    return {"id": entry.id, "entry": json.dumps(payload, default=str)}


def decode_entry(item_id: str, encoded: str) -> BatchItem | tuple[str, str]:
    payload = json.loads(encoded)
    if "error" in payload:
        return (str(item_id), payload["error"])
    return BatchItem(id=str(item_id), text=payload["text"], fields=payload["fields"])


class RowWorker:
    """One Ray actor: builds the work once, then turns batches of entries into output lines."""

    def __init__(self, factory: ProcessFactory, concurrency: int = 1):
        self.process = factory()
        self.pool = ThreadPoolExecutor(max_workers=concurrency) if concurrency > 1 else None

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        entries = [decode_entry(i, e) for i, e in zip(batch["id"], batch["entry"])]
        if self.pool is not None:
            rows = list(self.pool.map(lambda entry: row_for(entry, self.process), entries))
        else:
            rows = [row_for(entry, self.process) for entry in entries]
        return {"line": [row_line(row) for row in rows],
                "error": [row.get("status") == "error" for row in rows]}


def start_ray(options: RayOptions) -> tuple[Any, bool]:
    """The `ray` module, initialised; True when this call started it (and so must shut it down)."""
    ray = require("ray", "ray")
    require("ray.data", "ray")
    if ray.is_initialized():
        return ray, False
    common = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": True}
    if options.address:
        ray.init(address=options.address, **common)
        return ray, True
    init_local(ray, num_cpus=options.local_cpus, **common)
    try:
        check_fits(ray.cluster_resources(), options)
    except ValueError:
        ray.shutdown()
        raise
    return ray, True


def init_local(ray, attempts: int = 3, **kwargs) -> None:
    """`ray.init` of a local instance, tried again when its raylet misses Ray's fixed 30 s
    start-up wait (it does on a saturated machine)."""
    for attempt in range(1, attempts + 1):
        try:
            ray.init(**kwargs)
            return
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception for this
            ray.shutdown()
            if "timed out during startup" not in str(exc) or attempt == attempts:
                raise


def check_fits(resources: dict, options: RayOptions) -> None:
    """A local instance cannot grow: an actor pool larger than it would wait forever."""
    for name, each, flag in (("CPU", options.cpus_per_actor, "--cpus-per-actor"),
                             ("GPU", options.gpus_per_actor, "--gpus-per-actor")):
        need, have = options.actors * each, resources.get(name, 0)
        if need > have + 1e-9:
            raise ValueError(f"{options.actors} actors x {each:g} {name} need {need:g} {name}s; the local Ray "
                             f"instance has {have:g}: lower --actors or {flag} (fractions suit HTTP backends), "
                             "or join a cluster with --address")


def _dataset(ray, todo: list, factory: ProcessFactory, options: RayOptions, concurrency: int):
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # the driver shows its own bar
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    blocks = max(1, min(MAX_BLOCKS, math.ceil(len(todo) / options.batch_size)))
    source = ray.data.from_items([encode_entry(entry) for entry in todo], override_num_blocks=blocks)
    return source.map_batches(
        RowWorker, fn_constructor_args=(factory, concurrency), batch_size=options.batch_size,
        batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=options.actors),
        num_cpus=options.cpus_per_actor, num_gpus=options.gpus_per_actor or None,
    )


def run_ray(
    source: Iterable[BatchItem | tuple[str, str]],
    factory: ProcessFactory,
    output: Path,
    *,
    options: RayOptions | None = None,
    concurrency: int = 1,
    retry_errors: bool = False,
    progress: bool = True,
) -> BatchSummary:
    """`run_batch` on Ray Data: same rows, ids, error rows and resume; `concurrency` threads
    per actor (for HTTP backends)."""
    from tqdm import tqdm

    options = options or RayOptions()
    started = time.perf_counter()
    output = Path(output)
    todo, summary = pending(source, output, retry_errors)
    if not todo:
        return summary
    ray, owned = start_ray(options)
    try:
        results = _dataset(ray, todo, factory, options, concurrency)
        with output.open("a", encoding="utf-8") as out, \
                tqdm(total=len(todo), disable=not progress, desc="items (ray)", unit="item") as bar:
            for batch in results.iter_batches(batch_size=None, batch_format="numpy"):
                for line, error in zip(batch["line"], batch["error"]):
                    out.write(str(line))
                    count_row(summary, {"status": "error"} if error else {})
                out.flush()
                bar.update(len(batch["line"]))
    finally:
        if owned:
            ray.shutdown()
    summary.seconds = time.perf_counter() - started
    return summary
