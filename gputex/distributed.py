"""Convert many files over a Dask cluster: ``pip install 'gputex[dask]'``.

::

    import gputex.distributed
    results = gputex.distributed.convert(paths, "capture", out="out/", mips=True, level="all")
    failed = [r for r in results if not r.ok]

Each Dask worker process keeps one long-lived :class:`~gputex.Converter` (one device, warm
pools), made by its first task and reused by every later one. Run one worker per GPU (give
each its adapter with ``GPUTEX_ADAPTER`` in its environment), or on a software adapter one
per CPU slot: without ``client``/``address`` a local cluster is started with one
single-threaded worker per core when only software adapters exist, else one per GPU.

Files travel by path (the cluster shares a filesystem); outputs are written by the workers,
atomically, with the names a local run gives (inputs that share a stem go to the same task,
in input order, so ``-2`` suffixes match), and bytes equal to a local run's
(tests/batch/test_distributed.py). A task that raises is retried ``retries`` times; a task on a
worker that dies is rescheduled by Dask on another (``distributed.scheduler.allowed-failures``
times); a file that cannot be converted is a result with ``ok=False``, not retried. One
result per file, in input order, each naming the worker (``host:pid``) that made it.

Why Dask, not Ray: measured on the 2-core development machine
(``benchmarks/cluster_overhead.py``, two runs): a local 2-worker cluster starts in 3.6 and
1.9 s with Dask against 9.6 and 12.7 s with Ray, and Dask with ``distributed`` installs ~25 MB
against Ray's 260 MB. Ray's tasks cost less (0.4 ms against 3.9-5 ms each), which chunking
several files per task amortises for Dask.
"""

from __future__ import annotations

import os
import socket
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from .converter import ConvertResult
from .errors import GputexError

__all__ = ["convert", "default_workers"]

_CONVERTERS: dict = {}  # in a worker process: (adapter, backend, threads, memory) -> Converter


def _need_dask():
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise GputexError("gputex.distributed needs Dask: pip install 'gputex[dask]'") from None


def default_workers() -> tuple[int, int]:
    """(workers, threads each) for a local cluster: one per GPU, or one single-threaded worker
    per core where only software adapters exist."""
    try:
        from .device import list_adapters

        gpus = [a for a in list_adapters() if a.info.get("adapter_type") != "CPU"]
    except Exception:  # noqa: BLE001 (no wgpu adapter: the workers will say so)
        gpus = []
    cores = os.cpu_count() or 1
    if gpus:
        return len(gpus), max(1, cores // len(gpus))
    return cores, 1


def _worker_converter(run: dict):
    """This process's Converter for these run settings (made once, kept)."""
    import atexit

    from .converter import Converter

    key = tuple(sorted(run.items()))
    conv = _CONVERTERS.get(key)
    if conv is None:
        conv = _CONVERTERS[key] = Converter(**run).start()
        atexit.register(conv.close)
    return conv


def _convert_task(paths: list[str], command: str, out: str | None, settings: dict, run: dict) -> list[dict]:
    """One task on a worker: the files of one chunk through the worker's Converter."""
    conv = _worker_converter(run)
    where = f"{socket.gethostname()}:{os.getpid()}"
    results = []
    for r in conv.convert(paths, command, out, **settings):
        d = {k: getattr(r, k) for k in ConvertResult.__dataclass_fields__ if k not in ("exception", "data")}
        d["worker"] = where
        results.append(d)
    return results


def _chunks(paths: list[str], size: int) -> list[list[str]]:
    """Paths in chunks of about ``size``; paths sharing a stem stay in one chunk, in order."""
    groups: OrderedDict[str, list[str]] = OrderedDict()
    for p in paths:
        groups.setdefault(os.path.splitext(os.path.basename(p))[0], []).append(p)
    chunks: list[list[str]] = []
    cur: list[str] = []
    for group in groups.values():
        if cur and len(cur) + len(group) > size:
            chunks.append(cur)
            cur = []
        cur += group
    if cur:
        chunks.append(cur)
    return chunks


def convert(inputs: Iterable[str], command: str = "capture", out: str | None = None, *, client=None,
            address: str | None = None, workers: int | None = None, threads: int | None = None,
            memory: int | None = None, adapter: str | None = None, backend: str | None = None,
            retries: int = 2, chunk: int | None = None, **settings: Any) -> list[ConvertResult]:
    """Run ``command`` over ``inputs`` on a Dask cluster; one result per file, in input order.

    Parameters
    ----------
    inputs
        Paths, globs or ``@list`` files (expanded here; folders are not walked).
    command, out, settings
        As :meth:`gputex.Converter.convert` (``out`` is required for capture and must be a
        folder every worker can write).
    client, address
        A ``distributed.Client``, or a scheduler address; neither: a local cluster of
        ``workers`` processes (default :func:`default_workers`), closed on return.
    threads, memory, adapter, backend
        Each worker's Converter: thread cap, MiB of images in flight, adapter choice.
    retries
        Further attempts of a task that raised (a worker's death is handled by Dask).
    chunk
        Files per task (default: enough for ~4 tasks per worker, at most 16).
    """
    _need_dask()
    from .batch import expand_inputs
    from .settings import SettingsError, make_options

    if settings.get("recursive"):
        raise SettingsError("recursive: folders are not walked in distributed runs; pass the files")
    if command == "capture" and out is None or out == "-":
        raise SettingsError("out: a distributed run needs an output folder the workers share (not in memory)")
    if out is not None and out.lower().endswith((".ktx2", ".dds")):
        raise SettingsError(f"out: {out} is one file; a distributed run writes one per input: give a folder")
    kind = next((k for k in ("array", "cube", "volume") if settings.get(k)), None)
    if kind:
        raise SettingsError(f"{kind}: makes one texture of every input; run it with gputex.Converter")
    make_options(command, {k: v for k, v in settings.items() if k != "key"}, out=out)  # refuse bad ones now
    items = expand_inputs(list(inputs) if not isinstance(inputs, str) else [inputs], stdin=[])
    results: list[ConvertResult | None] = [None] * len(items)
    todo = []
    for i, item in enumerate(items):
        if item.error:
            results[i] = ConvertResult(source=item.path, ok=False, error=item.error)
        else:
            todo.append(item.path)
    if out is not None and out != "-":
        folder = out if not out.lower().endswith((".ktx2", ".dds")) else os.path.dirname(out) or "."
        os.makedirs(folder, exist_ok=True)
    own = None
    if client is None:
        from distributed import Client, LocalCluster

        if address is not None:
            client = own = Client(address)
        else:
            n, per = default_workers() if workers is None else (workers, 1)
            cluster = LocalCluster(n_workers=n, threads_per_worker=per, processes=True, dashboard_address=None)
            client = own = Client(cluster)
            threads = threads or per
    try:
        done = _run(client, todo, command, out, settings, retries, chunk,
                    {"adapter": adapter, "backend": backend, "threads": threads, "memory": memory})
    finally:
        if own is not None:
            cluster = getattr(own, "cluster", None)
            own.close()
            if cluster is not None and address is None:
                cluster.close()
    it = iter(done)
    return [r if r is not None else next(it) for r in results]


def _run(client, paths: list[str], command, out, settings, retries, chunk, run) -> list[ConvertResult]:
    from distributed import as_completed

    if not paths:
        return []
    n = max(1, len(client.scheduler_info().get("workers", {})) or 1)
    size = chunk or max(1, min(16, -(-len(paths) // (4 * n))))
    chunks = _chunks(paths, size)
    futures = {client.submit(_convert_task, c, command, out, settings, run, retries=retries, pure=False): c
               for c in chunks}
    by_path: dict[str, list] = {}
    for fut in as_completed(futures):
        c = futures[fut]
        try:
            got = [ConvertResult(**d) for d in fut.result()]
        except Exception as e:  # noqa: BLE001 (retries spent, or the workers died): each file says so
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            got = [ConvertResult(source=p, ok=False, error=f"{p}: task failed after {retries + 1} attempt(s) "
                                 f"({type(e).__name__}: {msg})") for p in c]
        for p, r in zip(c, got):
            by_path.setdefault(p, []).append(r)
    return [by_path[p].pop(0) for p in paths]
