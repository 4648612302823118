"""Scenario overrides from Python values: each becomes the ``KEY=VALUE`` text the CLI's
``--set`` takes, so that a key means the same from Python as on the command line."""

from __future__ import annotations

import json
import numbers
from typing import Any, Iterable, Mapping, Union

Sets = Union[Mapping[str, Any], Iterable[str], None]


def value_text(key: str, v: Any) -> str:
    """``v`` as it would be written after ``--set KEY=``: strings as given (``"256M"``,
    ``"1s"``), numbers and booleans in TOML's spelling, lists as TOML arrays."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        f = float(v)
        if f != f or f in (float("inf"), float("-inf")):
            raise ValueError(f"{key}: {f} is not a value a scenario key takes")
        return repr(f)
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_array_item(key, x) for x in v) + "]"
    raise ValueError(
        f"{key}: a {type(v).__name__} is not a scenario value "
        "(give a string, a number, a boolean or a list of them)"
    )


def _array_item(key: str, v: Any) -> str:
    # Inside an array a string must be quoted, as in TOML.
    return json.dumps(v) if isinstance(v, str) else value_text(key, v)


def set_list(sets: Sets) -> list[str]:
    """``{"machine.cpus": 64}`` or ``["machine.cpus=64"]`` as ``--set`` arguments, in order."""
    if sets is None:
        return []
    if isinstance(sets, str):
        raise ValueError(
            f"sets: give a dict {{KEY: VALUE}} or a list of 'KEY=VALUE' strings, not the string {sets[:100]!r}"
        )
    if isinstance(sets, Mapping):
        out = []
        for k, v in sets.items():
            if not isinstance(k, str):
                raise ValueError(f"sets: key {k!r} is not a string such as 'machine.cpus'")
            out.append(f"{k}={value_text(k, v)}")
        return out
    out = []
    for s in sets:
        if not isinstance(s, str):
            raise ValueError(f"sets: {s!r} is not a 'KEY=VALUE' string")
        out.append(s)
    return out


def profile_set(profile: str | None) -> list[str]:
    """``profile=`` as the CLI's ``--profile`` (a quoted ``machine.profile``), given last."""
    return [] if profile is None else [f"machine.profile={json.dumps(str(profile))}"]
