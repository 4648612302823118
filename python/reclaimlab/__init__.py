"""reclaimlab from Python: simulate Linux page reclaim and TLB flushing, load host and sim
results, compare them as the seeds' Before/After table, and sweep a grid of scenarios on local
processes or a Ray cluster. The numbers are the CLI's: the same Rust code computes them.

    >>> import reclaimlab
    >>> r = reclaimlab.sim("stress-vm", {"run.duration": "1s"}, policy="6.18+batch-dirty-flush")
    >>> r.to_pandas()
"""

from ._result import ResultDoc, compare, load, sim
from ._sweep import Sweep, load_sweep, sweep
from .executors import LocalExecutor, RayExecutor

__all__ = [
    "ResultDoc", "Sweep", "LocalExecutor", "RayExecutor",
    "sim", "load", "compare", "sweep", "load_sweep",
]
