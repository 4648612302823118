"""Fixtures: the CLI binary the Python results are checked against, and a local Ray cluster."""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The sweep the Python executors must reproduce: 16 points, each a 1 s stress-vm in a memcg tight
# enough for reclaim (about 0.2 s of simulation per point).
GRID = {"machine.cpus": [2, 4, 8, 16], "workload.workers": [2, 4, 8, 16]}
SETS = {"run.duration": "1s", "workload.bytes": "256M", "memcg.limit": "64M"}
AFTER = "6.18+batch-dirty-flush"


def cli_path() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "reclaimlab"


@pytest.fixture(scope="session")
def cli():
    p = cli_path()
    if not p.exists():
        pytest.fail(f"{p} is missing: build it first (bash scripts/setup)")

    def run(*args: str) -> str:
        return subprocess.run([str(p), *args], check=True, capture_output=True, text=True).stdout

    return run


@pytest.fixture(scope="session")
def cli_sweep(cli):
    """`reclaimlab sweep --json` over GRID, parsed."""
    args = ["sweep", "stress-vm", "--after", AFTER, "--json"]
    for k, vs in GRID.items():
        args += ["--vary", f"{k}={','.join(map(str, vs))}"]
    for k, v in SETS.items():
        args += ["--set", f"{k}={v}"]
    return json.loads(cli(*args))


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray cluster with 2 worker CPUs, started by this process; yields its address,
    which other drivers (subprocesses) connect to."""
    ray = pytest.importorskip("ray")
    # A directory of its own (removed after), with a short name: Ray's socket paths must fit in
    # 107 characters.
    tmp = tempfile.mkdtemp(prefix="rl-ray-")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=tmp, log_to_driver=False,
             configure_logging=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
