"""Where the nodes live: in this process (``InlineBackend``) or as Ray actors (``RayBackend``).

Both give the coordinator the same three calls: ``call_all(method, args_per_node)`` runs one
method on several nodes at once and returns their answers in order, ``call(node_id, method,
*args)`` runs one, ``shutdown()`` ends them. Calls of one ``call_all`` run concurrently (threads
inline, actor calls with Ray), so the producers and consumers of a phase work at the same time,
as Gamma's operator processes do. A node that dies, or a call that takes longer than
``timeout`` seconds, becomes a one-line ``MinidbError`` naming the node and the phase: the
driver never hangs.

Ray actors are threaded (``max_concurrency``), so a node can accept ``receive`` calls from other
nodes' split tables while one of its own operators runs. With no address a local Ray instance is
started; with ``address=`` (or the environment variable ``MINIDB_RAY_ADDRESS``) the actors join
that cluster and are spread over its machines: minidb node i goes to Ray node i mod (number of
Ray nodes), a soft node affinity (plain SPREAD did not separate zero-CPU actors in Ray 2.60).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from minidb.cluster.node import Node
from minidb.errors import MinidbError
from minidb.parallel.exchange import WINDOW


class InlineBackend:
    """Node objects in this process; the calls of one ``call_all`` run in threads."""

    name = "inline"

    def __init__(self, num_nodes: int, node_kwargs: list[dict], timeout: float = 60.0):
        self.timeout = timeout
        self.nodes = [Node(**kw) for kw in node_kwargs]
        self._pool = ThreadPoolExecutor(max_workers=4 * num_nodes + 4)
        for node in self.nodes:
            node.connect(self.nodes)

    def call_all(self, method: str, args_per_node: dict[int, tuple], phase: str = "") -> list:
        return self.call_many([(i, method, args) for i, args in args_per_node.items()], phase)

    def call_many(self, calls: list[tuple[int, str, tuple]], phase: str = "") -> list:
        """Run ``(node_id, method, args)`` calls at once; their answers, in order."""
        futures = [(i, method, self._pool.submit(getattr(self.nodes[i], method), *args))
                   for i, method, args in calls]
        out = []
        for i, method, f in futures:
            try:
                out.append(f.result(timeout=self.timeout))
            except FutureTimeout:
                raise MinidbError(f"node {i} did not finish {method} within {self.timeout:g} s "
                                  f"(phase {phase or method})") from None
        return out

    def call(self, node_id: int, method: str, *args, phase: str = ""):
        return self.call_all(method, {node_id: args}, phase)[0]

    def shutdown(self) -> None:
        for node in self.nodes:
            node.close()
        self._pool.shutdown(wait=False, cancel_futures=True)


class RayBackend:
    """Each node a Ray actor (threaded, so it receives packets while its operators run)."""

    name = "ray"

    def __init__(self, num_nodes: int, node_kwargs: list[dict], timeout: float = 60.0,
                 address: str | None = None, num_cpus: int | None = None):
        try:
            import ray
        except ImportError:
            raise MinidbError("backend='ray' needs Ray: pip install 'ray>=2.40'") from None
        self.ray, self.timeout = ray, timeout
        address = address or os.environ.get("MINIDB_RAY_ADDRESS")
        self.started_ray = False
        if not ray.is_initialized():
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(include_dashboard=False, ignore_reinit_error=True, log_to_driver=False,
                         num_cpus=num_cpus or min(os.cpu_count() or 2, max(2, num_nodes)))
            self.started_ray = True
        options = {"max_concurrency": num_nodes * WINDOW + 6, "num_cpus": 0}
        actor = ray.remote(Node)
        placements = [{}] * num_nodes
        if address:  # spread: minidb node i on Ray node i mod (Ray nodes), soft affinity
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            alive = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
            placements = [{"scheduling_strategy": NodeAffinitySchedulingStrategy(
                alive[i % len(alive)], soft=True)} for i in range(num_nodes)] if alive \
                else [{"scheduling_strategy": "SPREAD"}] * num_nodes
        self.actors = [actor.options(**options, **placements[i]).remote(**kw)
                       for i, kw in enumerate(node_kwargs)]
        self.call_all("connect", {i: (self.actors,) for i in range(num_nodes)}, "start nodes")

    def call_all(self, method: str, args_per_node: dict[int, tuple], phase: str = "") -> list:
        return self.call_many([(i, method, args) for i, args in args_per_node.items()], phase)

    def call_many(self, calls: list[tuple[int, str, tuple]], phase: str = "") -> list:
        """Run ``(node_id, method, args)`` calls at once; their answers, in order."""
        ray = self.ray
        refs = [(i, method, getattr(self.actors[i], method).remote(*args)) for i, method, args in calls]
        out = []
        for i, method, ref in refs:
            try:
                out.append(ray.get(ref, timeout=self.timeout))
            except ray.exceptions.GetTimeoutError:
                raise MinidbError(f"node {i} did not finish {method} within {self.timeout:g} s "
                                  f"(phase {phase or method})") from None
            except ray.exceptions.RayActorError:
                raise MinidbError(f"node {i} is dead: its actor failed during {method} "
                                  f"(phase {phase or method})") from None
            except ray.exceptions.RayTaskError as e:
                cause = getattr(e, "cause", None)
                if isinstance(cause, MinidbError):
                    raise type(cause)(f"node {i}: {cause}") from None
                raise MinidbError(f"node {i} failed in {method} (phase {phase or method}): "
                                  f"{str(e).splitlines()[0]}") from None
        return out

    def call(self, node_id: int, method: str, *args, phase: str = ""):
        return self.call_all(method, {node_id: args}, phase)[0]

    def shutdown(self) -> None:
        for a in self.actors:
            try:
                self.ray.get(a.close.remote(), timeout=5)
            except Exception:  # a dead node has nothing left to close
                pass
            self.ray.kill(a)
        if self.started_ray:
            self.ray.shutdown()


__all__ = ["InlineBackend", "RayBackend"]
