"""The slow fuzzing profile: many generated programs through every numbax transformation.

``python -m tests.fuzz`` (or ``make fuzz``) checks ``FUZZ_N`` programs (default 10,000)
in worker processes, prints the outcome counts per mode, the failure and refusal
classes with the shortest program of each, and the throughput, and writes every
failing program to ``--out`` (``tests/fuzz/found/``, ignored by git) with the failure
in its header, ready to become a regression test. ``--shrink K`` then asks Hypothesis
for a minimal program of each of the K most frequent failure classes.

``jit`` modes compile a fresh function per program (0.5-2 s each), so modes run
selectably: ``--modes eager,vmap`` is fast, ``--modes jit`` slow.

``--families NAMES`` (or ``all``) runs the construct families of
``tests/fuzz/families.py`` instead, ``-n`` programs each, with a report per family
(``tests/fuzz/run_families.py``).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

# Before numbax is imported (by the workers too): a private cache, so the thousands of
# generated modules do not pile up in the user's.
os.environ.setdefault("NUMBAX_CACHE_DIR", tempfile.mkdtemp(prefix="numbax-fuzz-cache-"))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from tests.fuzz.checks import ALL_MODES, OUTCOMES, check_program, modes_of  # noqa: E402
from tests.fuzz.families import FAMILIES  # noqa: E402
from tests.fuzz.generator import ALL_CONSTRUCTS, Program, programs  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent / "found"


@dataclass
class Record:
    """One program's results, small enough to send back from a worker."""

    program: Program
    rejected: str
    outcomes: list[tuple[str, str, str, str]]  # (mode, status, message, signature)


def run_chunk(
    chunk_seed: int, count: int, modes: tuple[str, ...], enabled: frozenset[str], timeout: float
) -> tuple[list[Record], float]:
    """Generate and check ``count`` programs (one worker's share); returns the records
    and the seconds spent."""
    import warnings

    warnings.simplefilter("ignore")
    records: list[Record] = []
    start = time.perf_counter()

    @seed(chunk_seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(programs(enabled))
    def each(program: Program) -> None:
        report = check_program(program, modes, timeout=timeout)
        outcomes = [(o.mode, o.status, o.message, o.signature) for o in report.outcomes]
        records.append(Record(program, report.rejected, outcomes))

    each()
    return records, time.perf_counter() - start


def write_failure(out: Path, record: Record, mode: str, message: str, signature: str) -> Path:
    """The failing program as a module whose header says how it failed."""
    klass = hashlib.sha1(signature.encode()).hexdigest()[:10]
    program = record.program
    digest = hashlib.sha1(program.source.encode()).hexdigest()[:10]
    folder = out / f"{mode}-{klass}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{digest}.py"
    header = [
        f"# numbax fuzz failure: {signature}",
        f"# mode: {mode}",
        f"# x = np.array({list(program.x)!r}); s = {program.s!r}; in_axes = {program.vmap_in_axes}",
        f"# constructs: {', '.join(sorted(program.features))}",
        *("# " + line for line in message.splitlines()[:6]),
        "",
    ]
    path.write_text("\n".join(header) + program.source)
    return path


def shrink(signature: str, example: Program, timeout: float, budget: int) -> Program | None:
    """A minimal program failing with ``signature``, found by Hypothesis among
    programs of the constructs the example uses."""
    from tests.fuzz.run_families import failing_alike

    def check(program: Program, modes: tuple[str, ...]) -> object:
        return check_program(program, modes, timeout=timeout)

    enabled = frozenset(example.features) | {"elementwise"}
    return failing_alike(programs(enabled), check, signature, budget)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("-n", type=int, default=int(os.environ.get("FUZZ_N", "10000")))
    parser.add_argument("--modes", default="eager,vmap,jit", help="groups eager, vmap, jit")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("FUZZ_WORKERS", "2")))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", "0")))
    parser.add_argument("--chunk", type=int, default=100, help="programs per worker task")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mode")
    parser.add_argument("--exclude", default="", help="construct classes to leave out")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--shrink", type=int, default=0, help="minimize the K top classes")
    parser.add_argument("--shrink-budget", type=int, default=150)
    parser.add_argument(
        "--budget", type=float, default=None, help="families: stop starting chunks after S s"
    )
    parser.add_argument(
        "--families",
        default="",
        help="construct families instead of the core generator: 'all' or names among "
        + ", ".join(FAMILIES)
        + " (-n programs each; modes eager and jit, or single ones such as jit_grad)",
    )
    args = parser.parse_args(argv)

    if args.families:
        from tests.fuzz.family_checks import family_modes_of
        from tests.fuzz.run_families import families_of, main_families

        try:
            families = families_of(args.families)
        except ValueError as error:
            parser.error(str(error))
        family_modes = family_modes_of(args.modes)
        if not family_modes:
            parser.error(f"no family mode in {args.modes!r}: use eager, jit or a mode name")
        return main_families(
            families,
            args.n,
            family_modes,
            args.workers,
            args.seed,
            args.chunk,
            args.timeout,
            args.out,
            args.shrink,
            args.shrink_budget,
            args.budget,
        )

    modes = modes_of(args.modes)
    excluded = {c.strip() for c in args.exclude.split(",") if c.strip()}
    unknown = excluded - ALL_CONSTRUCTS
    if unknown:
        parser.error(f"unknown constructs {sorted(unknown)}; known: {sorted(ALL_CONSTRUCTS)}")
    enabled = ALL_CONSTRUCTS - excluded
    chunks = [
        (args.seed * 100_003 + k, min(args.chunk, args.n - start))
        for k, start in enumerate(range(0, args.n, args.chunk))
    ]

    counts: dict[str, collections.Counter] = {m: collections.Counter() for m in ALL_MODES}
    rejected: collections.Counter = collections.Counter()
    classes: dict[str, list[tuple[Record, str, str]]] = collections.defaultdict(list)
    done = 0
    start = time.perf_counter()
    print(f"numbax fuzz: {args.n} programs, modes {', '.join(modes)}, {args.workers} workers")
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(run_chunk, s, c, modes, enabled, args.timeout) for s, c in chunks]
        for future in as_completed(futures):
            records, _ = future.result()
            for record in records:
                done += 1
                if record.rejected:
                    rejected[record.rejected.split(":")[0]] += 1
                for mode, status, message, signature in record.outcomes:
                    counts[mode][status] += 1
                    if status != "ok" and status != "skipped":
                        classes[signature].append((record, mode, message))
            elapsed = time.perf_counter() - start
            print(f"  {done}/{args.n} programs, {done / elapsed:.2f} programs/s", flush=True)

    elapsed = time.perf_counter() - start
    print(f"\n{done} programs in {elapsed:.0f} s ({done / elapsed:.2f} programs/s)")
    print(
        "not checked (no trustworthy reference): "
        + ", ".join(f"{k} {v}" for k, v in rejected.most_common())
        if rejected
        else "all checked"
    )
    print(f"\n{'mode':10}" + "".join(f"{o:>10}" for o in OUTCOMES))
    for mode in modes:
        print(f"{mode:10}" + "".join(f"{counts[mode][o]:>10}" for o in OUTCOMES))

    failures = 0
    for title, wanted in (("failure", {"wrong", "crash"}), ("refusal", {"declined"})):
        selected = [(s, r) for s, r in classes.items() if s.split(" | ")[1] in wanted]
        selected.sort(key=lambda item: -len(item[1]))
        print(f"\n{len(selected)} {title} classes")
        for signature, hits in selected:
            shortest = min(hits, key=lambda h: len(h[0].program.source))
            print(f"\n[{len(hits)}] {signature}")
            if title == "failure":
                failures += len(hits)
                for record, mode, message in hits:
                    write_failure(args.out, record, mode, message, signature)
                print(repr(shortest[0].program))
    if failures:
        print(f"\nfailing programs written under {args.out}")

    if args.shrink:
        top = [(s, r) for s, r in classes.items() if s.split(" | ")[1] in {"wrong", "crash"}]
        top.sort(key=lambda item: -len(item[1]))
        for signature, hits in top[: args.shrink]:
            print(f"\nshrinking: {signature}")
            example = min(hits, key=lambda h: len(h[0].program.source))[0].program
            minimal = shrink(signature, example, args.timeout, args.shrink_budget)
            print(repr(minimal) if minimal else "  (no example found within the budget)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
