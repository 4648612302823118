"""Results and the Before/After table as Python objects and pandas DataFrames."""

from __future__ import annotations

import json
import os
from typing import Any, Union

from . import _native
from ._sets import Sets, profile_set, set_list


class ResultDoc:
    """A result document (schema ``reclaimlab.result/1``, docs/result-schema.md), from the
    simulator or the host backend: the same fields as the CLI's JSON, as attributes."""

    def __init__(self, doc: dict[str, Any]):
        self._doc = doc

    @classmethod
    def from_json(cls, text: str) -> "ResultDoc":
        return cls(json.loads(text))

    # The document's fields.
    schema = property(lambda self: self._doc["schema"])
    scenario = property(lambda self: self._doc["scenario"])
    backend = property(lambda self: self._doc["backend"])
    kernel = property(lambda self: self._doc["kernel"])
    policy = property(lambda self: self._doc.get("policy", ""))
    machine = property(lambda self: self._doc["machine"])
    config = property(lambda self: self._doc["config"])
    runs = property(lambda self: self._doc["runs"])
    median = property(lambda self: self._doc["median"])
    min = property(lambda self: self._doc["min"])
    max = property(lambda self: self._doc["max"])

    @property
    def throughput_unit(self) -> str:
        return self.runs[0]["throughput"]["unit"] if self.runs else ""

    def to_dict(self) -> dict[str, Any]:
        """The document as the CLI's ``--json`` prints it (a copy)."""
        return json.loads(self.to_json())

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self._doc, indent=indent)

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the document as JSON, for ``reclaimlab compare`` or :func:`load`."""
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w") as f:
            f.write(self.to_json(indent=2) + "\n")
        os.replace(tmp, path)

    def to_pandas(self):
        """One row per run (repetition): what ran, whether the run counts, its throughput and
        wall (host) or simulated (sim) seconds, then every counter (the kernel's vmstat names)."""
        import pandas as pd

        rows = []
        for i, r in enumerate(self.runs):
            row = {
                "scenario": self.scenario,
                "backend": self.backend,
                "kernel": self.kernel,
                "policy": self.policy,
                "run": i,
                "valid": r.get("valid", True),
                "throughput": r["throughput"]["value"],
                "throughput_unit": r["throughput"]["unit"],
                "wall_seconds": r["wall_seconds"],
                "oom_kills": r.get("oom_kills", 0),
            }
            row.update(r["counters"])
            rows.append(row)
        return pd.DataFrame(rows)

    def summary(self):
        """Median, min and max over the valid runs, one row per metric (what compare uses)."""
        import pandas as pd

        return pd.DataFrame({"median": self.median, "min": self.min, "max": self.max})

    def __repr__(self) -> str:
        what = self.policy or self.kernel
        return (
            f"<ResultDoc {self.backend} {what} {self.scenario}: {len(self.runs)} run(s), "
            f"throughput {self.median.get('throughput', float('nan')):g} {self.throughput_unit}>"
        )


def sim(
    scenario: str,
    sets: Sets = None,
    *,
    policy: str | None = None,
    seed: int | None = None,
    profile: str | None = None,
) -> ResultDoc:
    """Simulate ``scenario`` (a shipped name or a .toml path), as ``reclaimlab sim``.

    ``sets`` overrides scenario keys (``{"machine.cpus": 64, "run.duration": "1s"}``);
    ``policy`` is the kernel, ``PRESET[+PATCH...]`` (default: the scenario's); ``seed`` sets
    ``run.seed``; ``profile`` a machine profile's costs. The GIL is released while it runs.
    Raises ``ValueError`` with the CLI's message (naming the key) for bad input."""
    extra = profile_set(profile) + ([] if seed is None else [f"run.seed={int(seed)}"])
    return ResultDoc.from_json(_native.simulate(scenario, set_list(sets) + extra, policy))


def load(path: Union[str, os.PathLike]) -> ResultDoc:
    """Read a result file written by ``sim``/``bench`` (``--out``) or :meth:`ResultDoc.save`."""
    return ResultDoc.from_json(_native.load(os.fspath(path)))


def _doc_json(x: Union[ResultDoc, str, os.PathLike]) -> str:
    if isinstance(x, ResultDoc):
        return x.to_json()
    if isinstance(x, (str, os.PathLike)):
        return _native.load(os.fspath(x))
    raise ValueError(f"compare takes results or result files, not a {type(x).__name__}")


def compare(
    before: Union[ResultDoc, str, os.PathLike],
    after: Union[ResultDoc, str, os.PathLike],
    *,
    all: bool = False,
    allow_mismatch: bool = False,
):
    """The seeds' Before/After/Delta table as a DataFrame, one row per metric (index: the
    metric's key; ``name``: as the mail table names it). Refused with ``ValueError``, as
    ``reclaimlab compare`` refuses, when a result is unusable or the two differ in more than the
    kernel (unless ``allow_mismatch``). ``delta_pct`` is NaN where the CLI prints n/a (a before
    value of 0). ``df.attrs`` holds the two sides' labels, the throughput unit, the notes and
    any differences."""
    import pandas as pd

    c = json.loads(_native.compare(_doc_json(before), _doc_json(after), all, allow_mismatch))
    df = pd.DataFrame(c["rows"], columns=[
        "metric", "before", "after", "delta", "delta_pct", "significant", "assessed"
    ])
    df.insert(1, "name", c["names"])
    df = df.set_index("metric")
    for k in ("before", "after", "throughput_unit"):
        df.attrs[k] = c[k]
    df.attrs["notes"] = c.get("notes", [])
    df.attrs["differences"] = c.get("differences", [])
    if c.get("end_methods") is not None:
        df.attrs["end_methods"] = c["end_methods"]
    return df
