"""sweep on local processes and on a local Ray cluster: the CLI's numbers, streamed to the
output, resumable after a kill."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import reclaimlab

from conftest import AFTER, GRID, SETS


def _sweep(**kw):
    return reclaimlab.sweep("stress-vm", GRID, after=AFTER, sets=SETS, progress=False, **kw)


def _lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.endswith("\n")]


def test_local_processes_equal_the_cli_sweep(cli_sweep, tmp_path):
    out = tmp_path / "local.jsonl"
    s = _sweep(executor=reclaimlab.LocalExecutor(max_workers=2), out=out)
    assert s.points == cli_sweep
    assert s.ran == list(range(16)) and s.kept == []
    # Every point was written as it finished, after the header.
    lines = _lines(out)
    assert lines[0]["scenario"] == "stress-vm" and len(lines) == 17
    assert sorted(l["point"] for l in lines[1:]) == list(range(16))
    assert reclaimlab.load_sweep(out).points == cli_sweep
    df = s.to_pandas()
    assert len(df) == sum(len(p["comparison"]["rows"]) for p in cli_sweep)
    row = df[(df["machine.cpus"] == 16) & (df["workload.workers"] == 16)
             & (df.metric == "tlb_shootdowns")]
    want = [r for r in cli_sweep[15]["comparison"]["rows"] if r["metric"] == "tlb_shootdowns"]
    assert row.delta.item() == want[0]["delta"] < 0


def test_ray_equals_the_cli_sweep(cli_sweep, ray_cluster):
    s = _sweep(executor="ray")
    assert s.points == cli_sweep


def test_killed_half_way_then_resumed(cli_sweep, ray_cluster, tmp_path):
    out = tmp_path / "ray.jsonl"
    driver = (
        "import ray, reclaimlab, sys\n"
        "sys.path.insert(0, sys.argv[3])\n"
        "from conftest import AFTER, GRID, SETS\n"
        "ray.init(address=sys.argv[1], log_to_driver=False)\n"
        "reclaimlab.sweep('stress-vm', GRID, after=AFTER, sets=SETS, executor='ray',"
        " out=sys.argv[2], progress=False)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", driver, ray_cluster, str(out),
                          os.path.dirname(__file__)])
    try:
        deadline = time.monotonic() + 120
        while not (out.exists() and len(_lines(out)) - 1 >= 8):
            assert p.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no 8 points in 2 minutes"
            time.sleep(0.01)
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.wait()
    before = _lines(out)[1:]
    done = sorted(l["point"] for l in before)
    assert 8 <= len(done) < 16, done

    s = _sweep(executor="ray", out=out, resume=True)
    assert s.kept == done
    assert sorted(s.ran) == sorted(set(range(16)) - set(done)), "a finished point ran again"
    assert s.points == cli_sweep
    after = _lines(out)[1:]
    assert sorted(l["point"] for l in after) == list(range(16))
    # The points kept are the ones the killed run wrote, unchanged.
    kept = {l["point"]: l for l in before}
    assert all(kept[l["point"]] == l for l in after if l["point"] in kept)


def test_a_bad_point_is_a_value_error_naming_the_key(tmp_path, ray_cluster):
    grid = {"memcg.limit": ["64M", "12Q"]}
    for executor in (reclaimlab.LocalExecutor(max_workers=2), "ray"):
        out = tmp_path / f"bad-{executor!s:.5}.jsonl"
        with pytest.raises(ValueError, match="memcg.limit"):
            reclaimlab.sweep("stress-vm", grid, after=AFTER, sets=SETS, executor=executor,
                             out=out, progress=False)


def test_resume_refuses_another_sweep_and_out_is_not_overwritten(tmp_path):
    out = tmp_path / "s.jsonl"
    small = {"machine.cpus": [2]}
    reclaimlab.sweep("stress-vm", small, after=AFTER, sets=SETS, out=out, progress=False,
                     executor=reclaimlab.LocalExecutor(1))
    with pytest.raises(ValueError, match="exists"):
        reclaimlab.sweep("stress-vm", small, after=AFTER, sets=SETS, out=out, progress=False)
    with pytest.raises(ValueError, match="different sweep"):
        reclaimlab.sweep("stress-vm", {"machine.cpus": [4]}, after=AFTER, sets=SETS, out=out,
                         resume=True, progress=False)
    with pytest.raises(ValueError, match="unknown patch"):
        reclaimlab.sweep("stress-vm", small, after="6.18+nope", progress=False)
    with pytest.raises(ValueError, match="grid"):
        reclaimlab.sweep("stress-vm", {}, after=AFTER, progress=False)
