"""``reclaimlab.sweep``: the CLI's sweep grid, each point on an executor, every finished point
appended to the output at once so that an interrupted sweep resumes where it stopped.

The output is JSON lines: a header naming the sweep (scenario, grid, policies, sets), then one
``{"point": I, "at": [...], "comparison": {...}}`` per finished point, in the order they
finished. With ``resume=True`` the points already there are kept and only the others run."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Mapping, Sequence, Union

from . import _native
from ._sets import Sets, profile_set, set_list, value_text
from .executors import executor_for

FORMAT = "reclaimlab.sweep/1"


def _run_point(scenario: str, sets: list, at: list, before: str, after: str) -> str:
    # Module level, so that process pools and Ray ship it by reference.
    return _native.sweep_point(scenario, sets, [tuple(p) for p in at], before, after)


class Sweep:
    """A finished sweep: ``points`` as ``reclaimlab sweep --json`` prints them (grid order),
    ``ran`` the indices this call simulated and ``kept`` those taken from the output."""

    def __init__(self, header: dict, points: list, ran: list | None = None, kept: list | None = None):
        self.header = header
        self.points = points
        self.ran = ran or []
        self.kept = kept or []

    scenario = property(lambda self: self.header["scenario"])
    before = property(lambda self: self.header["before"])
    after = property(lambda self: self.header["after"])

    @property
    def axes(self) -> list[str]:
        return [k for k, _ in self.header["grid"]]

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.points, indent=indent)

    def to_pandas(self):
        """One row per (point, metric): the varied keys (numbers where they parse), the
        metric's key and name, before, after, delta, delta_pct."""
        import pandas as pd

        rows = []
        for p in self.points:
            at = {k: _number(v) for k, v in p["at"]}
            c = p["comparison"]
            for r in c["rows"]:
                row = dict(at)
                row.update(metric=r["metric"], before=r["before"], after=r["after"],
                           delta=r["delta"], delta_pct=r["delta_pct"])
                rows.append(row)
        df = pd.DataFrame(rows)
        df.attrs.update(before=self.before, after=self.after, scenario=self.scenario)
        return df

    def __repr__(self) -> str:
        return (f"<Sweep {self.scenario}: {self.after} vs {self.before}, {len(self.points)} points "
                f"over {', '.join(self.axes)}>")


def _number(v: str):
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v


def _header(scenario, axes, before, after, sets) -> dict:
    return {"format": FORMAT, "scenario": scenario, "grid": [[k, vs] for k, vs in axes],
            "before": before, "after": after, "sets": sets}


def _read_output(path: str) -> tuple[dict | None, dict[int, dict]]:
    """The header and the complete point lines of an output (a line cut by an interrupt is
    dropped: that point runs again)."""
    header, points = None, {}
    with open(path) as f:
        for i, line in enumerate(f):
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if i == 0:
                header = v
            elif isinstance(v, dict) and "point" in v and "comparison" in v:
                points[v["point"]] = {"at": v["at"], "comparison": v["comparison"]}
    return header, points


def load_sweep(path: Union[str, os.PathLike]) -> Sweep:
    """A sweep's output (complete or not) as a :class:`Sweep` of the points it holds."""
    header, points = _read_output(os.fspath(path))
    if not header or header.get("format") != FORMAT:
        raise ValueError(f"{os.fspath(path)} is not a reclaimlab sweep output")
    return Sweep(header, [points[i] for i in sorted(points)], kept=sorted(points))


class _Output:
    """The output file, appended to and flushed to disk point by point."""

    def __init__(self, path: str, header: dict, kept: dict[int, dict]):
        # Rewrite what is kept first (without a torn last line), then append to it.
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(json.dumps(header) + "\n")
            for i in sorted(kept):
                f.write(json.dumps({"point": i, **kept[i]}) + "\n")
        os.replace(tmp, path)
        self.f = open(path, "a")

    def write(self, i: int, point: dict) -> None:
        self.f.write(json.dumps({"point": i, **point}) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        self.f.close()


def sweep(
    scenario: str,
    grid: Mapping[str, Sequence[Any]],
    *,
    after: str,
    before: str = "6.18",
    sets: Sets = None,
    profile: str | None = None,
    executor: Any = "local",
    out: Union[str, os.PathLike, None] = None,
    resume: bool = False,
    progress: bool = True,
) -> Sweep:
    """Simulate every point of ``grid`` (``{"machine.cpus": [2, 4, 8, 16], ...}``, the product
    of the axes, first varying slowest) under ``before`` and ``after``, as ``reclaimlab sweep
    SCENARIO --vary KEY=V1,V2,... --before B --after A --set ...``, with the same numbers.

    ``executor``: ``"local"`` (processes), ``"ray"`` (a Ray task per point, on the cluster
    ``ray.init`` connected to) or a :class:`LocalExecutor`/:class:`RayExecutor`. ``out``: a
    JSON-lines file each finished point is appended to; ``resume=True`` keeps the points an
    interrupted sweep wrote there and runs only the others."""
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError("grid: give at least one axis, e.g. {'machine.cpus': [2, 4, 8]}")
    axes = []
    for k, vs in grid.items():
        if isinstance(vs, (str, bytes)) or not isinstance(vs, Sequence) or len(vs) == 0:
            raise ValueError(f"grid: {k}: give a list of values, e.g. [2, 4, 8]")
        axes.append((k, [value_text(k, v) for v in vs]))
    before, after = str(before), str(after)
    for spec in (before, after):
        _native.check_policy(spec)
    all_sets = set_list(sets) + profile_set(profile)
    points_at = _native.grid(axes)
    header = _header(scenario, axes, before, after, all_sets)
    ex = executor_for(executor)

    kept: dict[int, dict] = {}
    output = None
    if out is not None:
        path = os.fspath(out)
        if resume:
            if not os.path.exists(path):
                raise ValueError(f"resume: no output {path} (nothing was interrupted)")
            old, kept = _read_output(path)
            if old != json.loads(json.dumps(header)):
                raise ValueError(
                    f"resume: {path} belongs to a different sweep (its scenario, grid, "
                    "policies or sets differ); start afresh without resume")
            kept = {i: p for i, p in kept.items()
                    if 0 <= i < len(points_at) and [tuple(x) for x in p["at"]] == list(points_at[i])}
        elif os.path.exists(path):
            raise ValueError(f"{path} exists: continue that sweep with resume=True, or remove it")
        output = _Output(path, header, kept)
    elif resume:
        raise ValueError("resume needs out= (the file the interrupted sweep wrote)")

    todo = [i for i in range(len(points_at)) if i not in kept]
    if kept:
        print(f"reclaimlab: resuming: {len(kept)} of {len(points_at)} points already done",
              file=sys.stderr)
    bar = _bar(len(points_at), len(kept), progress)
    results = dict(kept)
    ran = []
    try:
        jobs = [(i, (scenario, all_sets, points_at[i], before, after)) for i in todo]
        for i, text in ex.run(_run_point, jobs):
            results[i] = json.loads(text)
            ran.append(i)
            if output:
                output.write(i, results[i])
            bar.update(1)
    except BaseException:
        if output:
            output.close()
            # Nothing finished: leave no output that would demand resume=True next time.
            if not ran and not kept:
                os.remove(os.fspath(out))
            output = None
        raise
    finally:
        bar.close()
        if output:
            output.close()
    return Sweep(header, [results[i] for i in range(len(points_at))], ran=sorted(ran),
                 kept=sorted(kept))


def _bar(total: int, initial: int, show: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="point", desc="sweep", disable=not show,
                file=sys.stderr)
