"""Presenting results: bandwidth fractions, the Markdown table, and the JSON file."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # runner imports this module to print its rows
    from benchmarks.runner import Row


def annotate_bandwidth(rows: list[Row]) -> None:
    """Express bandwidth-bound rows against the best triad bandwidth measured in this run.

    The bandwidth-limited time is bytes moved (inputs read plus output written, the
    STREAM convention) divided by the triad bandwidth; the note gives the achieved
    bandwidth and that as a fraction of the triad's. Above 100% means the data stayed in
    cache, which the triad's arrays are sized to defeat.
    """
    triad = [r.extra["gbs"] for r in rows if "gbs" in r.extra]
    if not triad:
        return
    best = max(triad)
    for row in rows:
        moved = row.extra.get("bytes_moved")
        if moved and row.median_s:
            achieved = moved / row.median_s / 1e9
            row.extra.update(bound_s=moved / (best * 1e9), fraction_of_triad=achieved / best)
            text = f"{achieved:.1f} GB/s = {achieved / best:.0%} of triad"
            row.note = f"{row.note}; {text}" if row.note else text


def format_seconds(seconds: float | None) -> str:
    """A time in the unit that suits it: s, ms or µs, three significant digits."""
    if seconds is None:
        return "-"
    unit, scale = next(
        ((unit, scale) for unit, scale in (("s", 1.0), ("ms", 1e-3)) if seconds >= scale),
        ("µs", 1e-6),
    )
    return f"{seconds / scale:.3g} {unit}"


def format_table(rows: list[Row]) -> str:
    """Rows as an aligned Markdown table (pasteable into the README)."""
    header = (
        "workload",
        "peer",
        "first call",
        "median",
        "min",
        "faults/call",
        "numbax/peer",
        "note",
    )
    body = [
        (
            r.workload,
            r.peer,
            format_seconds(r.first_s),
            format_seconds(r.median_s),
            format_seconds(r.min_s),
            "-" if r.faults_per_call is None else f"{r.faults_per_call:.3g}",
            "-" if r.ratio is None else f"{r.ratio:.2f}",
            r.note or (f"ERROR: {r.error}" if r.error else ""),
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(cells) for cells in body)])


def environment() -> dict[str, Any]:
    """Versions and machine facts that the numbers depend on, for the JSON file.

    Versions come from package metadata, so a numbax that fails to import still gets a
    results file that says which version failed.
    """
    versions = {"python": platform.python_version()}
    for package in ("numbax", "numpy", "numba", "jax", "jaxlib"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {"versions": versions, "cpu": cpu_model(), "cpu_count": os.cpu_count()}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else whatever ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as info:
            for text in info:
                if text.startswith("model name"):
                    return text.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_json(path: str, rows: list[Row], argv: Sequence[str], repeat: int = 1) -> None:
    """Results with the command line and environment, for later comparison of runs.

    ``repeat`` is ``--repeat``'s N: each row's median then summarizes N runs, whose
    medians are listed in its ``extra["run_medians"]``.
    """
    payload = {
        "command": " ".join([os.path.basename(sys.executable), "-m", "benchmarks", *argv]),
        "repeat": repeat,
        **environment(),
        "rows": [asdict(r) for r in rows],
    }
    with open(path, "w") as handle:
        json.dump(payload, handle, indent=2)
        handle.write("\n")
