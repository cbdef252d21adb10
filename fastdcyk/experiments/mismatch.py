"""Why a results file of another configuration is refused, and what to do: the message of
:class:`~fastdcyk.experiments.store.ConfigMismatchError`, in the words of the Python API or
of ``fastdcyk experiment`` (:mod:`fastdcyk.experiments.store` opens the files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastdcyk.experiments.config import _FIRST_OWN_ORDERS, ExperimentConfig

__all__ = ["API_OUT", "CLI_OUT", "mismatch_message", "moved_orders"]

#: How a message names the output path: the argument of run_experiment, the option of
#: ``fastdcyk experiment``.
API_OUT = "the out argument of run_experiment"
CLI_OUT = "--out"


def _option(name: str, cli: bool) -> str:
    """A configuration field as a message names it: the argument of
    :class:`ExperimentConfig`, or the option of ``fastdcyk experiment``."""
    if name == "own_orders":
        return "the variants' own orders"
    return f"--{name.replace('_', '-')}" if cli else name


#: The fields that :meth:`ExperimentConfig.to_dict` leaves out at these values.
_LEFT_OUT = {"grammar_encoding": "utf-8", "to_cnf": False, "readback": "matched"}


def _show(config: dict[str, Any], name: str) -> str:
    """A field of a configuration (as :meth:`ExperimentConfig.to_dict` gives it), shown."""
    value = config.get(name, _LEFT_OUT.get(name))
    if value is None:
        return "unset"
    if isinstance(value, list):  # orders: None is each variant's own
        return " ".join("own" if v is None else str(v) for v in value) or "none"
    return json.dumps(value, ensure_ascii=False)


def mismatch_message(
    path: Path,
    header: dict[str, Any],
    config: ExperimentConfig,
    config_hash: str,
    hashes: dict[str, str] | None,
    cli: bool,
) -> str:
    """Why a results file of another configuration is refused, and what to do: the fields
    of the configuration that differ (the file's value and this run's), else the grammars
    whose text changed since the file was written (named when its header keeps their
    hashes). ``cli``: name the options of ``fastdcyk experiment`` (else the arguments)."""
    out = CLI_OUT if cli else API_OUT
    head = (
        f"{str(path)!r} holds results of another configuration (hash "
        f"{header.get('config_hash')}) than this run's (hash {config_hash})"
    )
    moved = moved_orders(header, config, cli)
    if moved:
        return head + moved
    theirs = header.get("config") if isinstance(header.get("config"), dict) else {}
    mine = config.to_dict()
    fields = sorted(k for k in {*theirs, *mine} if theirs.get(k) != mine.get(k))
    kept = header.get("grammar_sha256")
    kept = kept if isinstance(kept, dict) else None
    changed = []
    if kept is not None and hashes is not None:
        changed = [g for g in sorted(kept) if g in hashes and kept[g] != hashes[g]]
    why = []
    if fields:
        why.append(
            "its configuration differs from this run's in "
            + "; ".join(
                f"{_option(k, cli)} (the file's {_show(theirs, k)}, this run's {_show(mine, k)})"
                for k in fields
            )
        )
    for g in changed:
        why.append(
            f"grammar {g} changed since these results were written (the sha256 of its text "
            f"was {kept[g][:12]}, is now {hashes[g][:12]})"  # type: ignore[index]
        )
    resume = []
    if fields:
        named = [_option(k, cli) for k in fields if k != "own_orders"]
        resume.append(f"rerun with the file's own {', '.join(named) or 'configuration'}")
    if changed:
        resume.append("restore the grammar" + ("s" if len(changed) > 1 else "") + " as it was")
    if not why and kept is not None and hashes is not None:  # all the same but the hash
        why.append(
            "its configuration and the text of its grammars are this run's, so the hash in "
            "its header was edited"
        )
        resume.append("restore the header's hash")
    elif not why:  # the same configuration: the text of a grammar changed
        resume.append("restore the grammar as it was")
        specs = list(dict.fromkeys((*config.grammars, config.source)))
        if len(specs) == 1:
            why.append(
                f"grammar {specs[0]} changed since these results were written (the "
                "configuration is the same, and its hash covers the grammar's text)"
            )
        else:
            why.append(
                f"the text of one of its grammars ({', '.join(specs)}) changed since these "
                "results were written (the configuration is the same, and its hash covers "
                "the grammars' text; this file's header is too old to say which grammar)"
            )
    return (
        f"{head}: "
        + "; ".join(why)
        + f". Records of two configurations are never mixed: write to a new file ({out}), "
        + f"or {' and '.join(resume)} to resume this one"
    )


def moved_orders(header: dict[str, Any], config: ExperimentConfig, cli: bool = True) -> str:
    """Where a file differs from a run only in the variants' own orders (a default that
    moved since the file was written: ``own_orders``), what to do about it (``cli``: in
    the options of ``fastdcyk experiment``, else in the arguments)."""
    mine = config.to_dict()
    moved = mine.get("own_orders")
    theirs = header.get("config")
    if not moved or not isinstance(theirs, dict) or "own_orders" in theirs:
        return ""
    if {k: v for k, v in mine.items() if k != "own_orders"} != theirs:
        return ""
    changes = ", ".join(f"the {v} variant's own order became {o!r}" for v, o in moved.items())
    earlier = tuple(dict.fromkeys(_FIRST_OWN_ORDERS[v] for v in moved))
    if cli:
        how, out = f"--orders {' '.join(earlier)}", CLI_OUT
    else:
        how, out = f"ExperimentConfig(orders={earlier!r}, ...)", API_OUT
    return (
        f". The file was written before {changes} (its records name the order each was "
        f"parsed in): {how} runs the earlier order, into a new file ({out})"
    )
