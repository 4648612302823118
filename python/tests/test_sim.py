"""sim, load and compare against the CLI, bad input, and the GIL."""

import json
import math
import threading
import time

import pytest

import reclaimlab

from conftest import ROOT

SMALL = {"machine.cpus": 64, "run.duration": "1s"}


@pytest.fixture(scope="module")
def before_after(tmp_path_factory, cli):
    """Two CLI result files (6.18 and 6.18+batch-dirty-flush) and the Python results."""
    d = tmp_path_factory.mktemp("docs")
    files = {}
    for side, patch in (("before", []), ("after", ["--patch", "batch-dirty-flush"])):
        files[side] = d / f"{side}.json"
        cli("sim", "stress-vm", "--set", "machine.cpus=64", "--set", "run.duration=1s",
            *patch, "--json", "--out", str(files[side]))
    return files


def test_sim_is_the_cli_result(before_after):
    r = reclaimlab.sim("stress-vm", SMALL, policy="6.18+batch-dirty-flush")
    assert r.to_dict() == json.loads(before_after["after"].read_text())
    assert r.backend == "sim" and r.policy == "6.18+batch-dirty-flush"
    # Sets given as the CLI's strings mean the same.
    same = reclaimlab.sim("stress-vm", ["machine.cpus=64", "run.duration=1s"],
                          policy="6.18+batch-dirty-flush")
    assert same.to_dict() == r.to_dict()


def test_to_pandas_has_each_run_and_counter():
    r = reclaimlab.sim("stress-vm", {"run.duration": "1s"})
    df = r.to_pandas()
    assert len(df) == len(r.runs) == 1
    run = r.runs[0]
    assert df.loc[0, "tlb_shootdowns"] == run["counters"]["tlb_shootdowns"] > 0
    assert df.loc[0, "throughput"] == run["throughput"]["value"]
    assert df.loc[0, "policy"] == r.policy
    assert r.summary().loc["pgsteal_anon", "median"] == run["counters"]["pgsteal_anon"]


def test_load_and_save_round_trip(before_after, tmp_path):
    r = reclaimlab.load(before_after["before"])
    assert r.to_dict() == json.loads(before_after["before"].read_text())
    r.save(tmp_path / "copy.json")
    assert reclaimlab.load(tmp_path / "copy.json").to_dict() == r.to_dict()


def test_a_host_result_loads_and_compares_as_the_cli_does(tmp_path, cli):
    # A stored validation suite keeps each configuration's host and sim results.
    suite = json.loads((ROOT / "validation/results/2026-11-25-quiet-default.json").read_text())
    cfg = next(c for c in suite["configs"] if c.get("host") and c.get("sim"))
    files = {}
    for side in ("host", "sim"):
        files[side] = tmp_path / f"{side}.json"
        files[side].write_text(json.dumps(cfg[side]))
    host = reclaimlab.load(files["host"])
    assert host.backend == "host" and host.to_dict() == cfg["host"]
    df = host.to_pandas()
    assert len(df) == len(cfg["host"]["runs"]) > 1
    assert list(df.tlb_shootdowns) == [r["counters"]["tlb_shootdowns"] for r in host.runs]
    want = json.loads(cli("compare", str(files["host"]), str(files["sim"]), "--json",
                          "--allow-mismatch"))
    got = reclaimlab.compare(host, files["sim"], allow_mismatch=True)
    assert got.drop(columns="name").reset_index().to_dict("records") == want["rows"]
    assert got.attrs["differences"] == want.get("differences", [])


def test_compare_is_the_cli_table(before_after, cli):
    want = json.loads(cli("compare", str(before_after["before"]), str(before_after["after"]),
                          "--json"))
    df = reclaimlab.compare(reclaimlab.load(before_after["before"]), before_after["after"])
    got = df.drop(columns="name").reset_index().to_dict("records")
    # A percentage the CLI leaves null (the before value is 0) is pandas' missing value.
    for r in got:
        if r["delta_pct"] != r["delta_pct"]:
            r["delta_pct"] = None
    assert got == want["rows"]
    assert df.attrs["before"] == want["before"] and df.attrs["after"] == want["after"]
    assert df.loc["tlb_shootdowns", "name"] == "TLB shootdowns"
    assert df.loc["tlb_shootdowns", "delta"] < 0


def test_compare_of_two_simulations_is_the_cli_compare_of_a_scenario(cli):
    # The CLI compares the two results in memory; Python passes them through JSON and back.
    want = json.loads(cli("compare", "stress-vm", "--before", "6.18", "--after",
                          "6.18+batch-dirty-flush", "--set", "machine.cpus=8",
                          "--set", "run.duration=1s", "--json"))
    sims = [reclaimlab.sim("stress-vm", {"machine.cpus": 8, "run.duration": "1s"}, policy=p)
            for p in ("6.18", "6.18+batch-dirty-flush")]
    got = reclaimlab.compare(*sims)
    rows = got.drop(columns="name").reset_index().to_dict("records")
    # A delta % of a metric that was 0 before is null in the JSON and NaN in pandas.
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in rows]
    assert rows == want["rows"]


def test_compare_refuses_what_the_cli_refuses(before_after):
    other = reclaimlab.sim("stress-vm", {"machine.cpus": 32, "run.duration": "1s"})
    with pytest.raises(ValueError, match="(?s)differ in more than the kernel.*machine.cpus: 64 vs 32"):
        reclaimlab.compare(before_after["before"], other)
    df = reclaimlab.compare(before_after["before"], other, allow_mismatch=True)
    assert any("machine.cpus" in d for d in df.attrs["differences"])


@pytest.mark.parametrize(
    "sets, key",
    [
        ({"machine.cpuz": 4}, "machine.cpuz"),
        ({"run.duration": "1 parsec"}, "run.duration"),
        ({"memcg.limit": "12Q"}, "memcg.limit"),
        ({"machine.cpus": 0}, "machine.cpus"),
        ({"machine.cpus": 10**30}, "machine.cpus"),
        ({"machine.cpus": "many"}, "machine.cpus"),
        ({"workload.bytes": "-1G"}, "workload.bytes"),
        ({"run.duration": ""}, "run.duration"),
        ({"host.grace": "soon"}, "host.grace"),
        ({"machine.cpus": {"a": 1}}, "machine.cpus"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_key(sets, key):
    with pytest.raises(ValueError) as e:
        reclaimlab.sim("stress-vm", sets)
    assert key in str(e.value)


def test_other_bad_input():
    with pytest.raises(ValueError, match="unknown patch"):
        reclaimlab.sim("stress-vm", policy="6.18+nope")
    with pytest.raises(ValueError, match="no-such-scenario"):
        reclaimlab.sim("no-such-scenario")
    with pytest.raises(OSError, match="cannot read"):
        reclaimlab.load("/nonexistent/result.json")


def test_a_file_that_is_not_a_result(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"schema": "something/else"}')
    with pytest.raises(ValueError, match="not a reclaimlab result"):
        reclaimlab.load(p)


def test_the_gil_is_released_while_simulating():
    inside = threading.Event()
    took = []

    def run():
        inside.set()
        t = time.perf_counter()
        reclaimlab.sim("stress-vm", {"run.duration": "3s"})
        took.append(time.perf_counter() - t)

    th = threading.Thread(target=run)
    th.start()
    inside.wait()
    # The longest this thread went without running Python while the simulation ran: holding
    # the GIL, the simulation would stop it for the whole run.
    longest, last = 0.0, time.perf_counter()
    while th.is_alive():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    th.join()
    assert took[0] > 0.2
    assert longest < took[0] / 2, (longest, took[0])
