"""LH* (minidb.sdds): operations per second on 1-8 server machines, inline and on Ray, and the
messages LH* spends per million operations.

Run:  .venv/bin/python benchmarks/bench_lhstar.py [--ops 100000] [--ray-ops 5000] [--no-ray]

Three tables, all measured in this one run:

1. **Throughput.** One client inserts ``ops`` keys into a new file, then a second client with a
   fresh image (0, 0) looks each one up, on 1, 2, 4 and 8 machines. Inline, the servers are
   objects in this process, so the rate is the cost of LH*'s own logic; on Ray each message to
   a server is an actor call, and the table gives the wall time per message beside it, then
   both beside the modeled cost of one message on the paper's SGI O2 (``sgi_o2`` profile).
2. **Messages per 10^6 operations** (from ``ops`` inserts and as many lookups, scaled): requests,
   forwards, IAMs, replies and the coordinator's split traffic, with the paper's expectation
   of about one message per insert and two per lookup (Section 2).
3. **Load factor** averaged over the growth, uncontrolled against controlled splitting.
"""

from __future__ import annotations

import argparse
import time

from minidb.sdds import LHStarFile


def load_and_look_up(machines: int, ops: int, backend: str) -> dict[str, float]:
    with LHStarFile(capacity=100, machines=machines, backend=backend) as f:
        loader, reader = f.client("loader"), f.client("reader")
        began = time.perf_counter()
        for k in range(ops):
            loader.insert(k, k)
        inserted = time.perf_counter()
        for k in range(ops):
            reader.lookup(k)
        done = time.perf_counter()
        delivered = (f.messages.requests + f.messages.forwards + f.messages.splits
                     + f.messages.transfers)  # the messages that were server calls
        return {"insert_s": inserted - began, "lookup_s": done - inserted,
                "ms_per_call": (done - began) * 1e3 / delivered, "buckets": f.state.buckets,
                "messages": f.messages, "loader": loader.messages, "reader": reader.messages}


def average_load(split: str, ops: int) -> float:
    f = LHStarFile(capacity=100, machines=1, split=split, threshold=0.9)
    c, samples = f.client(), []
    for k in range(ops):
        c.insert(k)
        if k % max(1, ops // 50) == 0 and k:
            samples.append(len(f) / (f.state.buckets * f.capacity))
    return sum(samples) / len(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=100_000, help="inserts (and lookups) inline")
    parser.add_argument("--ray-ops", type=int, default=5_000, help="inserts and lookups on Ray")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray rows")
    args = parser.parse_args()
    if args.ops < 1 or args.ray_ops < 1:
        parser.error("--ops and --ray-ops must be positive")
    report(args.ops, args.ray_ops, not args.no_ray)


def report(ops: int, ray_ops: int, ray: bool) -> None:
    """Measure and print the three tables."""
    print(f"1. Throughput: {ops:,} inserts then {ops:,} lookups by a fresh client "
          f"(Ray: {ray_ops:,} each), bucket capacity 100")
    print(f"{'backend':8} {'machines':>8} {'buckets':>8} {'inserts/s':>10} {'lookups/s':>10} "
          f"{'ms per server call':>19}")
    last, per_call = None, {}
    for backend in ["inline"] + (["ray"] if ray else []):
        started_ray = False
        if backend == "ray":
            import ray as ray_module

            from minidb.cluster.backends import start_ray

            started_ray = not ray_module.is_initialized()
            if started_ray:
                start_ray(num_cpus=2)
        n = ops if backend == "inline" else ray_ops
        try:
            for machines in (1, 2, 4, 8):
                r = load_and_look_up(machines, n, backend)
                print(f"{backend:8} {machines:>8} {r['buckets']:>8} {n / r['insert_s']:>10,.0f} "
                      f"{n / r['lookup_s']:>10,.0f} {r['ms_per_call']:>19.3f}")
                per_call.setdefault(backend, []).append(r["ms_per_call"])
                if backend == "inline" and machines == 8:
                    last = r
        finally:
            if started_ray:
                ray_module.shutdown()

    from minidb.cost.profiles import get_profile

    modeled = get_profile("sgi_o2").control_message_ms
    print(f"  modeled: one small message on the paper's SGI O2 (sgi_o2 control_message_ms) "
          f"{modeled:.3f} ms")
    for backend, calls in per_call.items():
        mean = sum(calls) / len(calls)
        print(f"  measured here, {backend}: {mean:.3f} ms per server call, "
              f"{mean / modeled:.2f}x the modeled O2 message")

    m, scale = last["messages"], 1e6 / (2 * ops)
    print(f"\n2. Messages per 10^6 operations (half inserts, half lookups; 8 machines, "
          f"{last['buckets']} buckets)")
    for name, value in m.as_dict().items():
        if value:
            print(f"  {name:12} {value * scale:>12,.0f}")
    w, r = last["loader"], last["reader"]
    print(f"  per insert (request + forwards): {(w.requests + w.forwards) / ops:.4f}; "
          f"per lookup by a fresh client (request + forwards + reply): "
          f"{(r.requests + r.forwards + r.replies) / ops:.4f}; the paper: about 1 and 2")
    print(f"  the fresh client was forwarded {r.forwards} times and got {r.iams} IAMs in "
          f"{ops:,} lookups")

    print("\n3. Load factor averaged over the growth (capacity 100, threshold 0.9)")
    loads = {s: average_load(s, ops) for s in ("uncontrolled", "controlled")}
    for s, v in loads.items():
        print(f"  {s:12} {v:.3f}")
    print(f"  controlled / uncontrolled: {loads['controlled'] / loads['uncontrolled']:.2f}x")


if __name__ == "__main__":
    main()
