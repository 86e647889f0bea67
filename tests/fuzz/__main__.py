"""Command line: ``python -m tests.fuzz --executions 10000 --seed 1``.

Prints progress, one line per failure class with a shrunk reproduction, and ends with ONE
summary line (``fuzz: N executions (...), W wrong, R raw exceptions, F refused, seed S``). Exits
with status 1 if any execution was wrong, raw or refused.

``--replay SEED:KIND:ROUND[:QUERY]`` runs one round again (or one query of it) and prints every
failure of it in full; give the same ``--features`` as the run that found it.
"""

from __future__ import annotations

import argparse
import sys
import time

from .configs import KINDS
from .grammar import features_from
from .runner import (
    Stats,
    failure_report,
    reproduction,
    run_fuzz,
    run_round,
    shrink,
    shrink_examples,
    summary_line,
)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz",
                                description="Differential fuzzing of minidb against DuckDB.")
    p.add_argument("--executions", type=int, default=2000, help="queries to run (default 2000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--configs", default="single,parallel",
                   help="configuration kinds, comma separated: single, parallel, ray")
    p.add_argument("--features", default=None,
                   help="feature flags: 'all', 'none' or a comma list (default: grammar.FEATURES)")
    p.add_argument("--queries-per-round", type=int, default=25)
    p.add_argument("--shrink", type=int, default=1,
                   help="failures per class to shrink for the reproduction (0: none)")
    p.add_argument("--replay", default=None, metavar="SEED:KIND:ROUND[:QUERY]")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p.parse_args(argv)


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise SystemExit(f"--configs takes some of {', '.join(KINDS)}, not {text!r}")
    return kinds


def _start_ray_if_needed(kinds: tuple[str, ...]) -> None:
    if "ray" in kinds:
        import ray

        if not ray.is_initialized():
            ray.init(include_dashboard=False, num_cpus=2, log_to_driver=False)


def replay(where: str, features: frozenset[str], queries: int) -> int:
    parts = where.split(":")
    seed, kind, round_no = int(parts[0]), parts[1], int(parts[2])
    only = int(parts[3]) if len(parts) > 3 else None
    _start_ray_if_needed((kind,))
    stats = Stats()
    run_round(stats, seed, round_no, kind, features, queries, only_query=only)
    for f in stats.failures:
        print(reproduction(shrink(f)), end="\n\n")
    print(f"replay {where}: {stats.executions} executions, {stats.bad} failing")
    return 1 if stats.bad else 0


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    features = features_from(args.features)
    if args.replay:
        return replay(args.replay, features, args.queries_per_round)
    kinds = _kinds(args.configs)
    _start_ray_if_needed(kinds)
    start = time.monotonic()
    every = max(1, args.executions // 20)
    last = [0]

    def progress(stats: Stats, rounds: int) -> None:
        if args.quiet or stats.executions - last[0] < every:
            return
        last[0] = stats.executions
        print(f"  {stats.executions}/{args.executions} executions, {rounds} rounds, "
              f"{stats.outcomes['wrong']} wrong, {stats.outcomes['raw_exception']} raw, "
              f"{stats.outcomes['refused']} refused, {time.monotonic() - start:.0f} s", flush=True)

    print(f"fuzzing minidb against DuckDB: seed {args.seed}, configurations {','.join(kinds)}, "
          f"features {','.join(sorted(features)) or 'none'}", flush=True)
    stats = run_fuzz(args.executions, args.seed, kinds, features, args.queries_per_round, progress)
    if stats.failures:
        examples = shrink_examples(stats, args.shrink) if args.shrink else {}
        print(failure_report(stats, examples))
    print(summary_line(stats, args.seed))
    return 1 if stats.bad else 0


if __name__ == "__main__":
    sys.exit(main())
