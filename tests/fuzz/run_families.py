"""The construct families' profile: ``python -m tests.fuzz --families NAMES``.

``-n`` programs of each family (``tests/fuzz/families.py``), checked by
``tests/fuzz/family_checks.py`` in worker processes (``--workers``, chunks of
``--chunk`` programs). The report, per family: programs, how many were not checked
(no trustworthy reference) and why, each mode's outcomes, the totals (checks, wrong,
crashes, refusals), and the failure and refusal classes with the shortest program of
each. Failing programs are written under ``--out``; ``--shrink K`` asks Hypothesis for
a minimal program of each family's K most frequent failure classes.

The long profile (13 cores): ``python -m tests.fuzz --families all -n 10000 --modes
eager --workers 13``, then ``-n 1000 --modes jit_grad``; ``--budget S`` stops starting
chunks after S seconds, to run it in pieces with a new ``--seed`` each.
"""

from __future__ import annotations

import collections
import hashlib
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from tests.fuzz.families import FAMILIES, FamilyProgram, family_programs

OUTCOMES = ("ok", "wrong", "crash", "declined", "skipped")

CHUNKS_PER_WORKER = 20
"""Chunks a worker process checks before fresh ones take over (a new pool for each batch
of ``workers`` times as many chunks): each program's generated and compiled code stays
in its process, and two workers that had checked 10,000 programs held 12 GB apiece.
(``max_tasks_per_child`` would do it per worker, but Python 3.11's pool stopped for good
when its workers were replaced.)"""


@dataclass
class FamilyRecord:
    program: FamilyProgram
    rejected: str
    outcomes: list[tuple[str, str, str, str]]  # (mode, status, message, signature)


def run_family_chunk(
    family: str, chunk_seed: int, count: int, modes: tuple[str, ...], timeout: float
) -> list[FamilyRecord]:
    """Generate and check ``count`` programs of ``family`` (one worker's share)."""
    import warnings

    from tests.fuzz.family_checks import check_family_program

    warnings.simplefilter("ignore")
    records: list[FamilyRecord] = []

    @seed(chunk_seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(family_programs(family))
    def each(program: FamilyProgram) -> None:
        report = check_family_program(program, modes, timeout=timeout)
        outcomes = [(o.mode, o.status, o.message, o.signature) for o in report.outcomes]
        records.append(FamilyRecord(program, report.rejected, outcomes))

    each()
    return records


def families_of(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return list(FAMILIES)
    unknown = set(names) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown families {sorted(unknown)}; known: {', '.join(FAMILIES)}")
    return names


def _write_failure(
    out: Path, record: FamilyRecord, mode: str, message: str, signature: str
) -> None:
    klass = hashlib.sha1(signature.encode()).hexdigest()[:10]
    digest = hashlib.sha1(record.program.source.encode()).hexdigest()[:10]
    folder = out / f"{record.program.family}-{mode}-{klass}"
    folder.mkdir(parents=True, exist_ok=True)
    header = [
        f"# numbax fuzz failure ({record.program.family}): {signature}",
        f"# mode: {mode}",
        f"# constructs: {', '.join(sorted(record.program.features))}",
        *("# " + line for line in message.splitlines()[:6]),
        "",
    ]
    (folder / f"{digest}.py").write_text("\n".join(header) + record.program.source)


def failing_alike(
    strategy: Any, check: Callable[[Any, tuple[str, ...]], Any], signature: str, budget: int
) -> Any:
    """A minimal example of ``strategy`` whose ``check`` (a report with outcomes) fails
    with ``signature``, found by Hypothesis within ``budget`` examples; None if none."""
    from hypothesis import find
    from hypothesis.errors import NoSuchExample

    mode = signature.split(" | ")[0]

    def fails_alike(program: Any) -> bool:
        return any(o.signature == signature for o in check(program, (mode,)).outcomes)

    try:
        return find(
            strategy,
            fails_alike,
            settings=settings(
                max_examples=budget,
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            ),
        )
    except NoSuchExample:
        return None


def shrink_family(family: str, signature: str, timeout: float, budget: int) -> FamilyProgram | None:
    """A minimal program of ``family`` failing with ``signature``."""
    from tests.fuzz.family_checks import check_family_program

    def check(program: FamilyProgram, modes: tuple[str, ...]) -> Any:
        return check_family_program(program, modes, timeout=timeout)

    return failing_alike(family_programs(family), check, signature, budget)


def main_families(
    families: list[str],
    n: int,
    modes: tuple[str, ...],
    workers: int,
    base_seed: int,
    chunk: int,
    timeout: float,
    out: Path,
    shrink: int,
    shrink_budget: int,
    budget: float | None = None,
) -> int:
    """Check ``n`` programs of each family. With ``budget`` (seconds), chunks not started
    by then are dropped and the report covers the programs checked: the families take
    turns chunk by chunk, so each has its share, and a long profile can run in pieces
    (each with its own ``base_seed``)."""
    tasks = [
        (family, base_seed * 100_003 + 1_000 * f + k, min(chunk, n - start))
        for k, start in enumerate(range(0, n, chunk))
        for f, family in enumerate(families)
    ]
    records: dict[str, list[FamilyRecord]] = {family: [] for family in families}
    total = n * len(families)
    done = 0
    start_time = time.perf_counter()
    print(
        f"numbax fuzz families: {n} programs each of {', '.join(families)}; "
        f"modes {', '.join(modes)}; {workers} workers"
    )
    deadline = start_time + budget if budget else float("inf")
    found = collections.Counter()  # wrong and crash outcomes so far
    batch = workers * CHUNKS_PER_WORKER
    for first in range(0, len(tasks), batch):
        if time.perf_counter() > deadline:
            print(f"  the budget is spent: {len(tasks) - first} chunks dropped", flush=True)
            break
        with ProcessPoolExecutor(max_workers=workers) as pool:  # fresh processes per batch
            futures = {
                pool.submit(run_family_chunk, family, s, c, modes, timeout): family
                for family, s, c in tasks[first : first + batch]
            }
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                try:
                    chunk_records = future.result()
                except BrokenProcessPool as err:
                    print(f"  a worker died ({err}): its batch is left out", flush=True)
                    break
                records[futures[future]] += chunk_records
                done += len(chunk_records)
                for record in chunk_records:  # written as they come: a run cut short keeps them
                    for mode, status, message, signature in record.outcomes:
                        if status in ("wrong", "crash"):
                            found[status] += 1
                            _write_failure(out, record, mode, message, signature)
                elapsed = time.perf_counter() - start_time
                print(
                    f"  {done}/{total} programs, {done / elapsed:.2f} programs/s; "
                    f"{found['wrong']} wrong, {found['crash']} crashes",
                    flush=True,
                )
                if time.perf_counter() > deadline:
                    sum(f.cancel() for f in futures)
    elapsed = time.perf_counter() - start_time
    print(f"\n{done} programs in {elapsed:.0f} s ({done / max(elapsed, 1e-9):.2f} programs/s)")

    failures = 0
    summary = []
    for family in families:
        failures += _report_family(family, records[family], modes, out, summary)
    print("\nsummary")
    print(
        f"{'family':16}{'programs':>10}{'checked':>9}{'checks':>8}{'wrong':>7}{'crashes':>8}{'refusals':>9}"
    )
    for row in summary:
        print(
            f"{row[0]:16}"
            + "".join(f"{v:>{w}}" for v, w in zip(row[1:], (10, 9, 8, 7, 8, 9), strict=True))
        )
    if failures:
        print(f"\nfailing programs written under {out}")

    if shrink:
        for family in families:
            classes = _classes(records[family], {"wrong", "crash"})
            for signature, _ in classes[:shrink]:
                print(f"\nshrinking ({family}): {signature}")
                minimal = shrink_family(family, signature, timeout, shrink_budget)
                print(repr(minimal) if minimal else "  (no example found within the budget)")
    return 1 if failures else 0


def _classes(records: list[FamilyRecord], wanted: set[str]) -> list[tuple[str, list]]:
    classes: dict[str, list] = collections.defaultdict(list)
    for record in records:
        for mode, status, message, signature in record.outcomes:
            if status in wanted:
                classes[signature].append((record, mode, message))
    return sorted(classes.items(), key=lambda item: -len(item[1]))


def _report_family(
    family: str, records: list[FamilyRecord], modes: tuple[str, ...], out: Path, summary: list
) -> int:
    counts: dict[str, collections.Counter] = {m: collections.Counter() for m in modes}
    rejected: collections.Counter = collections.Counter()
    for record in records:
        if record.rejected:
            rejected[record.rejected.split(":")[0]] += 1
        for mode, status, _, _ in record.outcomes:
            counts[mode][status] += 1
    checked = sum(1 for r in records if not r.rejected)
    print(f"\n=== {family}: {len(records)} programs, {checked} checked")
    if rejected:
        print(
            "not checked (no trustworthy reference): "
            + ", ".join(f"{k} {v}" for k, v in rejected.most_common())
        )
    print(f"{'mode':16}" + "".join(f"{o:>10}" for o in OUTCOMES))
    for mode in modes:
        print(f"{mode:16}" + "".join(f"{counts[mode][o]:>10}" for o in OUTCOMES))
    totals = {o: sum(c[o] for c in counts.values()) for o in OUTCOMES}
    checks = sum(totals.values()) - totals["skipped"]
    summary.append(
        (
            family,
            len(records),
            checked,
            checks,
            totals["wrong"],
            totals["crash"],
            totals["declined"],
        )
    )
    failures = 0
    for title, wanted in (("failure", {"wrong", "crash"}), ("refusal", {"declined"})):
        classes = _classes(records, wanted)
        print(f"\n{family}: {len(classes)} {title} classes")
        for signature, hits in classes:
            shortest = min(hits, key=lambda h: len(h[0].program.source))
            features = collections.Counter(f for h in hits for f in h[0].program.features)
            common = ", ".join(f"{k} {v}" for k, v in features.most_common(4))
            print(f"\n[{len(hits)}] {signature}\n  constructs: {common}")
            if title == "failure":  # written under ``out`` as they came
                failures += len(hits)
                print(repr(shortest[0].program))
                print(f"  {shortest[2][:400]}")
    return failures
