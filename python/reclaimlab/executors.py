"""Where sweep points run. An executor takes a function and its jobs and yields each job's
result as it finishes, in any order; a failed job raises its exception (the others are
cancelled). Each point is one independent, deterministic simulation pair, so where it runs
never changes its numbers."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator


class LocalExecutor:
    """Processes on this machine (``concurrent.futures``), ``max_workers`` at once (default:
    one per CPU). ``start_method`` is multiprocessing's: ``fork`` by default where there is
    one, since it does not re-run the caller's script (``spawn`` would, in a script without an
    ``if __name__ == "__main__"`` guard); the workers only call into the simulator."""

    def __init__(self, max_workers: int | None = None, start_method: str | None = None):
        import multiprocessing

        self.max_workers = max_workers or os.cpu_count() or 1
        methods = multiprocessing.get_all_start_methods()
        self.start_method = start_method or ("fork" if "fork" in methods else "spawn")

    def run(self, fn: Callable, jobs: Iterable[tuple[Any, tuple]]) -> Iterator[tuple[Any, Any]]:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        ctx = multiprocessing.get_context(self.start_method)
        pool = ProcessPoolExecutor(max_workers=self.max_workers, mp_context=ctx)
        try:
            futures = {pool.submit(fn, *args): key for key, args in jobs}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    yield futures[f], f.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return f"LocalExecutor(max_workers={self.max_workers})"


class RayExecutor:
    """Each job a Ray task. It uses the Ray connection the caller made
    (``ray.init(address=...)`` points it at a cluster); without one it calls
    ``ray.init(address, **init_kwargs)``, which starts a local Ray when ``address`` is None.
    Every worker must be able to ``import reclaimlab`` (the same package version)."""

    def __init__(self, address: str | None = None, num_cpus: float = 1, **init_kwargs: Any):
        self.address = address
        self.num_cpus = num_cpus
        self.init_kwargs = init_kwargs

    def run(self, fn: Callable, jobs: Iterable[tuple[Any, tuple]]) -> Iterator[tuple[Any, Any]]:
        import ray

        if not ray.is_initialized():
            ray.init(address=self.address, **self.init_kwargs)
        task = ray.remote(num_cpus=self.num_cpus, max_retries=0)(fn)
        refs = {task.remote(*args): key for key, args in jobs}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for r in done:
                    try:
                        value = ray.get(r)
                    except ray.exceptions.RayTaskError as e:
                        # The task's own exception (e.g. ValueError naming the key).
                        cause = getattr(e, "cause", None)
                        if isinstance(cause, BaseException):
                            raise cause from None
                        raise
                    yield refs[r], value
        finally:
            for r in pending:
                ray.cancel(r, force=True)

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r})"


def executor_for(executor: Any):
    """``"local"``, ``"ray"``, or an object with the executors' ``run`` method."""
    if executor == "local":
        return LocalExecutor()
    if executor == "ray":
        return RayExecutor()
    if hasattr(executor, "run"):
        return executor
    raise ValueError(f"executor: 'local', 'ray', LocalExecutor(...) or RayExecutor(...), not {executor!r}")
