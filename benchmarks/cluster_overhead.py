"""Dask or Ray for ``gputex[...]``: start-up and per-task overhead of a local 2-worker cluster.

Measures, for each engine that imports: import time, cluster start (2 worker processes),
one long-lived actor/state per worker, the round trip of N tiny tasks, and shutdown. The
gputex work itself is the same under either; what differs is what each engine adds.

    python3 benchmarks/cluster_overhead.py [--tasks 200]
    PYTHONPATH=/path/to/ray python3 benchmarks/cluster_overhead.py   # ray installed elsewhere
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _state_pid(x: int) -> int:
    return os.getpid() + 0 * x


def dask_run(tasks: int) -> dict:
    t0 = time.perf_counter()
    from dask.distributed import Client, LocalCluster

    t1 = time.perf_counter()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    t2 = time.perf_counter()
    futs = client.map(_state_pid, range(tasks), pure=False)
    pids = set(client.gather(futs))
    t3 = time.perf_counter()
    client.close()
    cluster.close()
    t4 = time.perf_counter()
    return {"import": t1 - t0, "start": t2 - t1, "tasks": t3 - t2, "per_task_ms": (t3 - t2) / tasks * 1e3,
            "shutdown": t4 - t3, "workers": len(pids)}


def ray_run(tasks: int) -> dict:
    t0 = time.perf_counter()
    import ray

    t1 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

    @ray.remote(num_cpus=1)
    class Worker:
        def pid(self, x: int) -> int:
            return os.getpid() + 0 * x

    actors = [Worker.remote() for _ in range(2)]
    ray.get([a.pid.remote(0) for a in actors])
    t2 = time.perf_counter()
    pids = set(ray.get([actors[i % 2].pid.remote(i) for i in range(tasks)]))
    t3 = time.perf_counter()
    ray.shutdown()
    t4 = time.perf_counter()
    return {"import": t1 - t0, "start": t2 - t1, "tasks": t3 - t2, "per_task_ms": (t3 - t2) / tasks * 1e3,
            "shutdown": t4 - t3, "workers": len(pids)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--only", choices=["dask", "ray"])
    a = ap.parse_args()
    print(f"{os.cpu_count()} cores, python {sys.version.split()[0]}")
    for name, fn in (("dask", dask_run), ("ray", ray_run)):
        if a.only and a.only != name:
            continue
        try:
            r = fn(a.tasks)
        except ImportError as e:
            print(f"{name}: not installed ({e})")
            continue
        print(f"{name}: import {r['import']:.2f} s, 2-worker start {r['start']:.2f} s, {a.tasks} tasks "
              f"{r['tasks']:.2f} s ({r['per_task_ms']:.2f} ms each), shutdown {r['shutdown']:.2f} s, "
              f"{r['workers']} worker processes")


if __name__ == "__main__":
    main()
