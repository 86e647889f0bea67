"""Where the nodes live: in this process (``InlineBackend``) or as Ray actors (``RayBackend``).

Both give the coordinator the same three calls: ``call_all(method, args_per_node)`` runs one
method on several nodes at once and returns their answers in order, ``call(node_id, method,
*args)`` runs one, ``shutdown()`` ends them. Calls of one ``call_all`` run concurrently (threads
inline, actor calls with Ray), so the producers and consumers of a phase work at the same time,
as Gamma's operator processes do. A node that dies, or a phase that takes longer than
``timeout`` seconds, becomes a one-line ``MinidbError`` naming the node and the phase: the
driver never hangs. The answers of a phase are awaited together against one deadline (not one
timeout per node), and the first failure ends the wait; when several nodes fail at once (a dead
node makes its partners fail too), the dead node is the one reported. ``shutdown`` waits at
most a few seconds for the nodes to close, then kills the actors: a dead or stuck node cannot
make it hang either.

Ray actors are threaded (``max_concurrency``), so a node can accept ``receive`` calls from other
nodes' split tables while one of its own operators runs. With no address a new local Ray
instance is started, even where ``ray start`` or a test's ``ray.cluster_utils.Cluster`` left a
cluster recorded on the machine (``/tmp/ray/ray_current_cluster``) or ``RAY_ADDRESS`` is set:
plain ``ray.init()`` would join that one. With ``address=`` (or the environment variable
``MINIDB_RAY_ADDRESS``) the actors join that cluster and are spread over its machines: minidb node
i goes to Ray node i mod (number of Ray nodes), a hard node affinity (plain SPREAD, and a soft
affinity right after a node joins, left zero-CPU actors together in Ray 2.60).

When Ray cannot start (a start that times out on a busy machine) or the cluster cannot be
joined, the error is one line naming what failed, and the Ray processes this start began
(GCS server, raylet, and the raylet's agents) are ended, not left running.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures

from minidb.cluster.node import Node
from minidb.errors import MinidbError
from minidb.parallel.exchange import WINDOW

#: seconds ``shutdown`` gives the nodes to close before their actors are killed
CLOSE_WAIT_S = 5.0
#: seconds the nodes get to start (actors, and their data directories reopened)
START_TIMEOUT_S = 60.0
#: after a first failure, seconds to wait for the other answers of the phase, to find a dead node
GRACE_S = 1.0


class InlineBackend:
    """Node objects in this process; the calls of one ``call_all`` run in threads."""

    name = "inline"

    def __init__(self, num_nodes: int, node_kwargs: list[dict], timeout: float = 60.0):
        self.timeout = timeout
        self.nodes = [Node(**kw) for kw in node_kwargs]
        self._pool = ThreadPoolExecutor(max_workers=8 * num_nodes + 8)
        for node in self.nodes:
            node.connect(self.nodes)

    def call_all(self, method: str, args_per_node: dict[int, tuple], phase: str = "") -> list:
        return self.call_many([(i, method, args) for i, args in args_per_node.items()], phase)

    def call_many(self, calls: list[tuple[int, str, tuple]], phase: str = "") -> list:
        """Run ``(node_id, method, args)`` calls at once; their answers, in order."""
        futures = [(i, method, self._pool.submit(getattr(self.nodes[i], method), *args))
                   for i, method, args in calls]
        _, pending = wait_futures([f for _, _, f in futures], timeout=self.timeout,
                                  return_when=FIRST_EXCEPTION)
        for _, _, f in futures:  # the first failure, in node order, is raised as it is
            if f.done() and f.exception() is not None:
                raise f.exception()
        for i, method, f in futures:
            if f in pending:
                raise MinidbError(f"node {i} did not finish {method} within {self.timeout:g} s "
                                  f"(phase {phase or method})")
        return [f.result() for _, _, f in futures]

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
            start_ray(address, num_cpus or min(os.cpu_count() or 2, max(2, num_nodes)))
            self.started_ray = True
        options = {"max_concurrency": num_nodes * WINDOW + 6, "num_cpus": 0}
        actor = ray.remote(Node)
        placements = [{}] * num_nodes
        if address:  # spread: minidb node i on Ray node i mod (Ray nodes), a hard node affinity
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            alive = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
            placements = [{"scheduling_strategy": NodeAffinitySchedulingStrategy(
                alive[i % len(alive)], soft=False)} for i in range(num_nodes)] if alive \
                else [{"scheduling_strategy": "SPREAD"}] * num_nodes
        self.actors = [actor.options(**options, **placements[i]).remote(**kw)
                       for i, kw in enumerate(node_kwargs)]
        try:  # starting actors (and reopening their directories) may take longer than a phase
            self.call_many([(i, "connect", (self.actors,)) for i in range(num_nodes)],
                           "start nodes", timeout=max(timeout, START_TIMEOUT_S))
        except BaseException:
            self.shutdown()  # the actors that did start must not outlive the failure
            raise

    def call_all(self, method: str, args_per_node: dict[int, tuple], phase: str = "") -> list:
        return self.call_many([(i, method, args) for i, args in args_per_node.items()], phase)

    def call_many(self, calls: list[tuple[int, str, tuple]], phase: str = "",
                  timeout: float | None = None) -> list:
        """Run ``(node_id, method, args)`` calls at once; their answers, in order."""
        ray = self.ray
        phase = phase or (calls[0][1] if calls else "")
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        refs = []
        for i, method, args in calls:
            try:
                refs.append(getattr(self.actors[i], method).remote(*args))
            except ray.exceptions.RayActorError:
                raise self._dead(i, method, phase) from None
        who = {ref: n for n, ref in enumerate(refs)}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1,
                                      timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                i, method, _ = calls[who[pending[0]]]
                raise MinidbError(f"node {i} did not finish {method} within {timeout:g} s "
                                  f"(phase {phase})")
            failed = self._failure(ready[0], calls[who[ready[0]]], phase)
            if failed is not None:
                # a dead node makes its partners fail as well: report the dead one if there is
                others, _ = ray.wait(pending, num_returns=len(pending), timeout=GRACE_S) \
                    if pending else ([], [])
                for ref in others:
                    other = self._failure(ref, calls[who[ref]], phase)
                    if other is not None and other.dead and not failed.dead:
                        failed = other
                raise failed.error
        return [ray.get(ref) for ref in refs]

    def _failure(self, ref, call: tuple, phase: str) -> _Failure | None:
        """What went wrong with a finished call (None: nothing), as a one-line error."""
        ray, (i, method, _) = self.ray, call
        try:
            ray.get(ref, timeout=0)
            return None
        except ray.exceptions.RayActorError as e:
            if getattr(e, "actor_init_failed", False):  # the node could not open: say why
                last = str(e).strip().splitlines()[-1]
                why = last.split(": ", 1)[-1] if "Error: " in last else last
                return _Failure(MinidbError(f"node {i} could not start (phase {phase}): {why}"),
                                True)
            return _Failure(self._dead(i, method, phase), True)
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, MinidbError):
                try:
                    return _Failure(type(cause)(f"node {i} (phase {phase}): {cause}"), False)
                except TypeError:  # an error class with another signature: keep its message
                    pass
            lines = str(cause if cause is not None else e).strip().splitlines() or [type(e).__name__]
            return _Failure(MinidbError(f"node {i} failed in {method} (phase {phase}): "
                                        f"{lines[-1] if cause is None else lines[0]}"), False)

    @staticmethod
    def _dead(i: int, method: str, phase: str) -> MinidbError:
        return MinidbError(f"node {i} is dead: its actor died during {method} (phase {phase}); "
                           "close the database and connect again to reopen its data directory")

    def call(self, node_id: int, method: str, *args, phase: str = ""):
        return self.call_all(method, {node_id: args}, phase)[0]

    def shutdown(self) -> None:
        """Ask every node to close (at most ``CLOSE_WAIT_S`` in all), then kill the actors."""
        refs = []
        for a in self.actors:
            try:
                refs.append(a.close.remote())
            except Exception:  # a dead node has nothing left to close
                pass
        if refs:
            try:
                self.ray.wait(refs, num_returns=len(refs), timeout=CLOSE_WAIT_S)
            except Exception:
                pass
        for a in self.actors:
            try:
                self.ray.kill(a, no_restart=True)
            except Exception:
                pass
        if self.started_ray:
            self.ray.shutdown()


def start_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Join the Ray cluster at ``address``, or start a new local instance with ``num_cpus``
    (default: one per core).

    ``address="local"`` is what makes it new: without it ``ray.init`` joins a cluster recorded
    on the machine, where ``num_cpus`` is refused. A failure becomes one ``MinidbError``, after
    every Ray process of this start has been ended.
    """
    try:
        import ray
    except ImportError:
        raise MinidbError("backend='ray' needs Ray: pip install 'ray>=2.40'") from None
    try:
        if address:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        else:  # Ray's start-up chatter stays out of minidb's output; failures are raised below
            ray.init(address="local", include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR, num_cpus=num_cpus or os.cpu_count() or 2)
    except BaseException as err:
        _end_failed_start(ray)
        if not isinstance(err, Exception):
            raise  # Ctrl-C stays Ctrl-C
        lines = str(err).strip().splitlines()
        why = f"{type(err).__name__}: {lines[0] if lines else 'no message'}"
        if address:
            raise MinidbError(f"could not join the Ray cluster at {address} ({why}); check that "
                              "it runs and the address (or MINIDB_RAY_ADDRESS), or leave the "
                              "address out to start a local Ray instance") from None
        raise MinidbError(f"could not start a local Ray instance ({why}); nothing was left "
                          "running. Retry when the machine is less busy, or use "
                          "backend='inline'") from None


def _end_failed_start(ray) -> None:
    """Stop what a failed ``ray.init`` of this process left: ``ray.shutdown()`` ends a Ray
    instance that got as far as connecting; processes of one that did not (a GCS server whose
    port never came up, a raylet and its agents) are killed here. They are found as this
    process's descendants whose command line names a Ray session this process began (Ray names
    it ``session_<date>_<time>_<pid>``), with everything they started in turn."""
    try:
        ray.shutdown()
    except Exception:  # a half-started instance may fail to shut down; the kill below remains
        pass
    try:
        import psutil  # Ray ships it (ray/thirdparty_files)
    except ImportError:
        return
    session = re.compile(rf"session_[\d_-]+_{os.getpid()}(?!\d)")
    doomed: dict[int, psutil.Process] = {}
    for process in psutil.Process().children(recursive=True):
        try:
            if session.search(" ".join(process.cmdline())):
                for p in [process, *process.children(recursive=True)]:
                    doomed[p.pid] = p
        except psutil.Error:  # gone already
            continue
    for process in doomed.values():
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    psutil.wait_procs(list(doomed.values()), timeout=5)


class _Failure:
    """A failed call: its one-line error, and whether the node itself died."""

    def __init__(self, error: MinidbError, dead: bool):
        self.error, self.dead = error, dead


__all__ = ["InlineBackend", "RayBackend", "start_ray"]
