"""Where the nodes live: in this process (``InlineBackend``) or as Ray actors (``RayBackend``).

Both give the coordinator the same three calls: ``call_all(method, args_per_node)`` runs one
method on several nodes at once and returns their answers in order, ``call(node_id, method,
*args)`` runs one, ``shutdown()`` ends them. Calls of one ``call_all`` run concurrently (threads
inline, actor calls with Ray), so the producers and consumers of a phase work at the same time,
as Gamma's operator processes do. A node that dies, or a phase that takes longer than
its deadline, becomes a one-line ``MinidbError`` naming the node, the phase and the machine's
load: the driver never hangs. The deadline is the ``timeout`` the user gave, or with none, 60 s
stretched by how loaded the machine is (``minidb.cluster.machine.phase_timeout``). The answers of a phase are awaited together against one deadline (not one
timeout per node), and the first failure ends the wait; when several nodes fail at once (a dead
node makes its partners fail too), the dead node is the one reported. ``shutdown`` waits at
most a few seconds for the nodes to close, then kills the actors: a dead or stuck node cannot
make it hang either.

Ray actors are threaded (``max_concurrency``), so a node can accept ``receive`` calls from other
nodes' split tables while one of its own operators runs, and ``LOCK_WAITS`` more for the lock
waits of parallel transactions (``minidb.cluster.transaction``). Several threads of the
coordinator may call at once (transactions, the scheduler's deadlock detector): ``call`` keeps
its state in the call (actor handles, ``ray.wait`` and ``ray.get`` are thread-safe); the one
shared field it writes is ``healthy``, only ever to False. A lock wait refused or timed out
(``LockError``) is an answer, not a failed phase: it leaves ``healthy`` as it was.

With no address a new local Ray instance is started, even where ``ray start`` or a test's
``ray.cluster_utils.Cluster`` left a cluster recorded on the machine
(``/tmp/ray/ray_current_cluster``) or ``RAY_ADDRESS`` is set: plain ``ray.init()`` would join
that one. With ``address=`` (or the environment variable
``MINIDB_RAY_ADDRESS``) the actors join that cluster and are spread over its machines: minidb node
i goes to Ray node i mod (number of Ray nodes), a hard node affinity (plain SPREAD, and a soft
affinity right after a node joins, left zero-CPU actors together in Ray 2.60).

When Ray cannot start (a start that times out on a busy machine) or the cluster cannot be
joined, the error is one line naming what failed, and the Ray processes this start began
(GCS server, raylet, and the raylet's agents) are ended, not left running.

Starting once. A Ray actor is a Python process that must start and import minidb: seconds of
CPU each, and an experiment builds many machines of 8 to 20 nodes. Inside ``node_pool()``
(``minidb.experiments`` opens one around every experiment, ``minidb reproduce`` around a whole
paper) closed machines give their actors back to a ``NodePool`` and the next machine takes them,
each made a fresh node first (``Node.renew``), so rows and modeled times are those of a fresh
start. Waits adapt to the machine: the nodes get ``start_timeout`` seconds to start (more for
more actors and a busier machine, never more than ``START_LIMIT_S``), a long wait says which
nodes are still awaited, and a start that fails is retried once before the error (naming the
experiment and the node) is raised. Ray's own messages (its start-up banner, the raylet's
warnings about how many worker processes it started) are kept out of minidb's output: they go
to the ``minidb.ray`` logger at DEBUG level.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures

from minidb.cluster.machine import busy_factor, load_note, machine_load, phase_timeout
from minidb.cluster.node import Node
from minidb.errors import LockError, MinidbError
from minidb.parallel.exchange import WINDOW, ProducerFailed

#: seconds ``shutdown`` gives the nodes to close before their actors are killed
CLOSE_WAIT_S = 5.0
#: seconds one round of node starts (one actor per core) gets on an idle machine
START_TIMEOUT_S = 60.0
#: the most seconds a start may take however busy the machine: past it, it has failed
START_LIMIT_S = 900.0
#: while nodes start, seconds between the notes saying which ones are still awaited
START_NOTE_EVERY_S = 30.0
#: seconds Ray waits for its GCS server on an idle machine (Ray's default, 30 s)
GCS_WAIT_S = 30
#: pooled actors serve machines of up to this many nodes (Teradata's 20 AMPs, the largest
#: machine the experiments build): machines of every size then reuse the same actors
POOL_NODES = 20
#: after a first failure, seconds to wait for the other answers of the phase, to find a dead node
GRACE_S = 1.0
#: lock requests of parallel transactions a database has in flight at once, at most (each may
#: wait on a node for up to its lock_timeout): every node serves this many calls beyond those its
#: query work needs, so waits never take the threads of its work (``minidb.cluster.transaction``)
LOCK_WAITS = 8

log = logging.getLogger("minidb.cluster")


class InlineBackend:
    """Node objects in this process; the calls of one ``call_all`` run in threads."""

    name = "inline"

    def __init__(self, num_nodes: int, node_kwargs: list[dict], timeout: float | None = None):
        self.timeout = timeout
        self.nodes = [Node(**kw) for kw in node_kwargs]
        self._pool = ThreadPoolExecutor(max_workers=8 * num_nodes + 8 + LOCK_WAITS)
        for node in self.nodes:
            node.connect(self.nodes)

    def call_all(self, method: str, args_per_node: dict[int, tuple], phase: str = "") -> list:
        return self.call_many([(i, method, args) for i, args in args_per_node.items()], phase)

    def call_many(self, calls: list[tuple[int, str, tuple]], phase: str = "") -> list:
        """Run ``(node_id, method, args)`` calls at once; their answers, in order."""
        futures = [(i, method, self._pool.submit(getattr(self.nodes[i], method), *args))
                   for i, method, args in calls]
        began = time.monotonic()
        pending = [f for _, _, f in futures]
        allowed = phase_timeout(self.timeout)
        while pending and not any(f.done() and f.exception() is not None for f in pending):
            allowed = phase_timeout(self.timeout)  # again: the machine may have got busier
            left = began + allowed - time.monotonic()
            if left <= 0:
                break
            _, still = wait_futures(pending, timeout=left, return_when=FIRST_EXCEPTION)
            pending = [f for f in pending if f in still]
        if any(f.done() and f.exception() is not None for _, _, f in futures):
            # let the other nodes' calls end first (within the same deadline): the next statement
            # must not meet a half-run phase, e.g. a scan still holding a page that DROP discards
            wait_futures(pending, timeout=max(0.0, began + allowed - time.monotonic()))
            failed = [f.exception() for _, _, f in futures
                      if f.done() and f.exception() is not None]
            # the first failure in node order, as it is; a consumer that only stopped because a
            # producer failed (ProducerFailed) gives way to that producer's own error
            error = next((e for e in failed if not isinstance(e, ProducerFailed)), failed[0])
            # the error's traceback will hold this frame: drop what the frame holds of it (the
            # list and the futures), or error and frame form a cycle that only the garbage
            # collector frees, with the nodes' frames in it, on whatever thread it next runs
            failed = futures = pending = None
            try:
                raise error
            finally:
                del error
        for i, method, f in futures:
            if f in pending:
                raise MinidbError(f"node {i} did not finish {method} within {allowed:.1f} s "
                                  f"(phase {phase or method}; {load_note()})")
        return [f.result() for _, _, f in futures]

    def call(self, node_id: int, method: str, *args, phase: str = ""):
        return self.call_all(method, {node_id: args}, phase)[0]

    def shutdown(self) -> None:
        for node in self.nodes:
            node.close()
        self._pool.shutdown(wait=False, cancel_futures=True)


def ship_by_value(cls: type) -> None:
    """Let Ray send ``cls`` itself rather than its import path.

    Ray pickles a class by reference (its module and name) whenever the module is importable in
    this process; a class defined in a test, a notebook or a student's own file is not importable
    on the workers, so its module is registered to travel by value (classes of minidb itself,
    which every worker imports, still go by reference)."""
    module = getattr(cls, "__module__", "") or ""
    if module.split(".")[0] == "minidb" or module == "__main__" or module not in sys.modules:
        return
    try:
        from ray import cloudpickle
    except ImportError:  # no Ray here: nothing is pickled across processes
        return
    cloudpickle.register_pickle_by_value(sys.modules[module])


def start_timeout(new_actors: int) -> float:
    """Seconds ``new_actors`` new Ray actors (and any reused ones) get to start here.

    An actor is a Python process that imports minidb; about one per core starts at once. So
    each round of ``cores`` new actors gets ``START_TIMEOUT_S``, stretched by ``busy_factor``
    (a machine running other work starts them slower), up to ``START_LIMIT_S``: a start that
    takes longer than that has failed, it is not just slow."""
    _, cores = machine_load()
    rounds = max(1.0, new_actors / cores)
    return min(START_LIMIT_S, START_TIMEOUT_S * rounds * busy_factor())


class NodePool:
    """Node actors kept between the machines this process builds, so that each starts once.

    Slot ``(i, where)`` holds an actor that served node i (placed on Ray node ``where``, "" for
    no placement) and can serve node i of the next machine. ``lend`` hands it out (or None: the
    backend starts a new actor); ``keep`` takes it back when its machine closes cleanly; an
    actor in doubt (a phase of its machine failed or timed out) is killed instead. ``purpose``
    names what the pool serves (an experiment) in messages about starting nodes."""

    def __init__(self, purpose: str = ""):
        self.purpose = purpose
        self.widest = 0  # the most calls at once that a pooled actor serves
        self._slots: dict[tuple[int, str], tuple[object, int]] = {}

    def lend(self, node_id: int, where: str, concurrency: int) -> tuple[object, int] | None:
        """The pooled actor for node ``node_id`` and how many calls it serves at once; None if
        there is none, or if it serves fewer than ``concurrency`` (it is killed then: a new
        actor replaces it)."""
        actor, has = self._slots.pop((node_id, where), (None, 0))
        if actor is not None and has < concurrency:
            _kill(actor)
            return None
        return None if actor is None else (actor, has)

    def keep(self, node_id: int, where: str, actor, concurrency: int) -> None:
        """Take back ``actor`` (node ``node_id``'s, serving ``concurrency`` calls at once) for
        the next machine."""
        self.widest = max(self.widest, concurrency)
        old = self._slots.get((node_id, where))
        if old is not None:  # two machines were open at once: keep one actor per slot
            _kill(actor if old[1] >= concurrency else old[0])
            if old[1] >= concurrency:
                return
        self._slots[(node_id, where)] = (actor, concurrency)

    def __len__(self) -> int:
        return len(self._slots)

    def clear(self) -> None:
        """Kill every pooled actor."""
        for actor, _ in self._slots.values():
            _kill(actor)
        self._slots.clear()


_pool: NodePool | None = None


@contextlib.contextmanager
def node_pool(purpose: str = "") -> Iterator[NodePool]:
    """Keep Ray node actors between the machines built inside this block (``NodePool``).

    Nested blocks share the outer pool (``minidb reproduce`` keeps one over a paper, each
    experiment names itself as its ``purpose`` meanwhile); the outermost one kills the pooled
    actors at its end."""
    global _pool
    outer = _pool
    pool = outer if outer is not None else NodePool()
    before, pool.purpose = pool.purpose, purpose or pool.purpose
    _pool = pool
    try:
        yield pool
    finally:
        pool.purpose = before
        _pool = outer
        if outer is None:
            pool.clear()


def _kill(actor) -> None:
    try:
        import ray

        ray.kill(actor, no_restart=True)
    except Exception:  # dead already, or Ray is gone: nothing left to end
        pass


class RayBackend:
    """Each node a Ray actor (threaded, so it receives packets while its operators run)."""

    name = "ray"

    def __init__(self, num_nodes: int, node_kwargs: list[dict], timeout: float | None = None,
                 address: str | None = None, num_cpus: int | None = None):
        try:
            import ray
        except ImportError:
            raise MinidbError("backend='ray' needs Ray: pip install 'ray>=2.40'") from None
        self.ray, self.timeout = ray, timeout
        quiet_ray_messages()
        address = address or os.environ.get("MINIDB_RAY_ADDRESS")
        self.started_ray = False
        if not ray.is_initialized():
            start_ray(address, num_cpus or min(os.cpu_count() or 2, max(2, num_nodes)))
            self.started_ray = True
        self.pool = _pool
        # calls a node must serve at once: its own operators and its peers' split tables, and
        # the lock waits of transactions (at most LOCK_WAITS, on threads of their own)
        self.concurrency = num_nodes * WINDOW + 6 + LOCK_WAITS
        if self.pool is not None:  # wide enough that machines of other sizes reuse it
            self.concurrency = max(self.concurrency, POOL_NODES * WINDOW + 6 + LOCK_WAITS,
                                   self.pool.widest)
        self.serves = [self.concurrency] * num_nodes  # what each actor serves (a pooled one more)
        self.where = self._placements(num_nodes, address)
        self.healthy = True  # False once a phase failed: its actors are not pooled again
        self.actors: list = []
        try:
            self.actors = self._start(node_kwargs)
        except BaseException:
            self.healthy = False
            self.shutdown()  # the actors that did start must not outlive the failure
            raise

    # -- starting the nodes ---------------------------------------------------------------------
    def _placements(self, num_nodes: int, address: str | None) -> list[str]:
        """The Ray node each minidb node goes to ("" where Ray chooses): with an address, minidb
        node i on Ray node i mod (Ray nodes), a hard node affinity."""
        if not address:
            return [""] * num_nodes
        alive = sorted(n["NodeID"] for n in self.ray.nodes() if n.get("Alive"))
        return [alive[i % len(alive)] if alive else "SPREAD" for i in range(num_nodes)]

    def _new_actor(self, node_id: int, kwargs: dict):
        options = {"max_concurrency": self.concurrency, "num_cpus": 0}
        where = self.where[node_id]
        if where == "SPREAD":
            options["scheduling_strategy"] = "SPREAD"
        elif where:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(where, soft=False)
        return self.ray.remote(Node).options(**options).remote(**kwargs)

    def _start(self, node_kwargs: list[dict]) -> list:
        """Start (or take from the pool) one actor per node and connect them; a failed start
        is retried once, with new actors, before its error is raised."""
        pool = self.pool
        what = f"experiment {pool.purpose}: " if pool is not None and pool.purpose else ""
        for attempt in (1, 2):
            reused = [pool.lend(i, self.where[i], self.concurrency) if pool is not None else None
                      for i in range(len(node_kwargs))]
            actors = [r[0] if r is not None else self._new_actor(i, kw)
                      for i, (r, kw) in enumerate(zip(reused, node_kwargs, strict=True))]
            self.serves = [r[1] if r is not None else self.concurrency for r in reused]
            calls = [(i, "renew", (node_kwargs[i], actors)) if reused[i] is not None
                     else (i, "connect", (actors,)) for i in range(len(actors))]
            new = sum(r is None for r in reused)
            try:
                self.actors = actors
                self._await_start(calls, max(phase_timeout(self.timeout), start_timeout(new)), what)
                return actors
            except _StartFailed as failed:
                for actor in actors:
                    _kill(actor)
                self.actors = []
                if attempt == 2 or not failed.retry:
                    again = "; it failed again when retried" if attempt == 2 else ""
                    raise MinidbError(f"{what}{failed.error}{again}") from None
                log.warning("%s%s; retrying once with new actors", what, failed.error)
        raise AssertionError("unreachable")

    def _await_start(self, calls: list[tuple[int, str, tuple]], timeout: float,
                     what: str = "") -> None:
        """Wait for every node's start call, saying every ``START_NOTE_EVERY_S`` seconds which
        nodes are still awaited (after ``what``, the experiment); ``_StartFailed`` when one
        fails or ``timeout`` passes."""
        ray, began = self.ray, time.monotonic()
        refs = [getattr(self.actors[i], method).remote(*args) for i, method, args in calls]
        node_of = {ref: calls[n][0] for n, ref in enumerate(refs)}
        pending, next_note = list(refs), began + START_NOTE_EVERY_S
        while pending:
            now = time.monotonic()
            wait = min(began + timeout, next_note) - now
            ready, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, wait))
            for ref in ready:
                failed = self._failure(ref, calls[refs.index(ref)], "start nodes")
                if failed is not None:
                    # a node whose own start raised (a bad data directory) fails again: no retry
                    raise _StartFailed(failed.error, retry=not failed.init_error)
            waiting = sorted(node_of[r] for r in pending)
            if waiting and time.monotonic() >= began + timeout:
                load, cores = machine_load()
                raise _StartFailed(MinidbError(
                    f"node {waiting[0]} did not start within {timeout:.0f} s ({len(waiting)} of "
                    f"{len(refs)} nodes still starting; the time allowed grows with the nodes "
                    f"to start and the machine's load, {load:.1f} on {cores} cores, up to "
                    f"{START_LIMIT_S:.0f} s)"), retry=True)
            if waiting and time.monotonic() >= next_note:
                log.warning("%sstill starting Ray nodes %s of %d after %.0f s (allowed: %.0f s; "
                            "load average %.1f on %d cores)", what,
                            ", ".join(map(str, waiting)), len(refs), time.monotonic() - began,
                            timeout, *machine_load())
                next_note += START_NOTE_EVERY_S

    # -- calls ----------------------------------------------------------------------------------
    def call_all(self, method: str, args_per_node: dict[int, tuple], phase: str = "") -> list:
        return self.call_many([(i, method, args) for i, args in args_per_node.items()], phase)

    def call_many(self, calls: list[tuple[int, str, tuple]], phase: str = "",
                  timeout: float | None = None) -> list:
        """Run ``(node_id, method, args)`` calls at once; their answers, in order."""
        try:
            return self._call_many(calls, phase, timeout)
        except LockError:  # a lock wait refused or timed out: the node forgot it, all is well
            raise
        except BaseException:
            self.healthy = False  # a node may hold a half-run phase: never pool its actor
            raise

    def _call_many(self, calls: list[tuple[int, str, tuple]], phase: str,
                   timeout: float | None) -> list:
        ray = self.ray
        phase = phase or (calls[0][1] if calls else "")
        timeout = self.timeout if timeout is None else timeout
        began = time.monotonic()
        refs = []
        for i, method, args in calls:
            try:
                refs.append(getattr(self.actors[i], method).remote(*args))
            except ray.exceptions.RayActorError:
                raise self._dead(i, method, phase) from None
        who = {ref: n for n, ref in enumerate(refs)}
        pending = list(refs)
        while pending:
            allowed = phase_timeout(timeout)  # each time: the machine may have got busier
            ready, pending = ray.wait(pending, num_returns=1,
                                      timeout=max(0.0, began + allowed - time.monotonic()))
            if not ready:
                if phase_timeout(timeout) > time.monotonic() - began:
                    continue  # the load grew while we waited: so does the deadline
                i, method, _ = calls[who[pending[0]]]
                raise MinidbError(f"node {i} did not finish {method} within {allowed:.1f} s "
                                  f"(phase {phase}; {load_note()})")
            failed = self._failure(ready[0], calls[who[ready[0]]], phase)
            if failed is not None:
                # a dead node makes its partners fail as well: report the dead one if there is
                others, _ = ray.wait(pending, num_returns=len(pending), timeout=GRACE_S) \
                    if pending else ([], [])
                for ref in others:
                    other = self._failure(ref, calls[who[ref]], phase)
                    if other is not None and other.dead and not failed.dead:
                        failed = other
                    elif (other is not None and isinstance(failed.error, ProducerFailed)
                          and not isinstance(other.error, ProducerFailed)):
                        failed = other  # the producer's own error, not its consumer's echo
                # as inline: this frame must not keep the error its traceback will hold (a
                # cycle freed by the garbage collector, object refs included, on any thread)
                error, failed = failed.error, None
                try:
                    raise error
                finally:
                    del error
        return [ray.get(ref) for ref in refs]

    def _failure(self, ref, call: tuple, phase: str) -> _Failure | None:
        """What went wrong with a finished call (None: nothing), as a one-line error."""
        ray, (i, method, _) = self.ray, call
        try:
            ray.get(ref, timeout=0)
            return None
        except ray.exceptions.RayActorError as e:
            # only the message is kept: Ray's frame that raised it refers to it, so with its
            # traceback it would be a cycle holding this stack (and its object refs) for the
            # garbage collector, to be freed on whatever thread it next runs
            e.__traceback__ = None
            if getattr(e, "actor_init_failed", False):  # the node could not open: say why
                last = str(e).strip().splitlines()[-1]
                why = last.split(": ", 1)[-1] if "Error: " in last else last
                return _Failure(MinidbError(f"node {i} could not start (phase {phase}): {why}"),
                                True, init_error=True)
            return _Failure(self._dead(i, method, phase), True)
        except ray.exceptions.RayTaskError as e:
            e.__traceback__ = None  # as above
            cause = getattr(e, "cause", None)
            if isinstance(cause, LockError):  # its message names the node already, as inline
                return _Failure(cause, False)
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
        """Ask every node to close (at most ``CLOSE_WAIT_S`` in all); then give the actors back
        to the pool (``node_pool``) when every node closed and no phase failed, else kill them."""
        refs = []
        for a in self.actors:
            try:
                refs.append(a.close.remote())
            except Exception:  # a dead node has nothing left to close
                pass
        closed: list = []
        if refs:
            try:
                closed, _ = self.ray.wait(refs, num_returns=len(refs), timeout=CLOSE_WAIT_S)
                self.ray.get(closed)
            except Exception:
                closed = []
        reuse = (self.pool is not None and self.healthy and not self.started_ray
                 and len(closed) == len(self.actors))
        for i, a in enumerate(self.actors):
            if reuse:
                self.pool.keep(i, self.where[i], a, self.serves[i])
            else:
                _kill(a)
        self.actors = []
        if self.started_ray:
            self.ray.shutdown()


def start_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Join the Ray cluster at ``address``, or start a new local instance with ``num_cpus``
    (default: one per core).

    ``address="local"`` is what makes it new: without it ``ray.init`` joins a cluster recorded
    on the machine, where ``num_cpus`` is refused. Ray's wait for its GCS server grows with the
    machine's load (``gcs_wait``), and a local start that fails is tried once more. A failure
    becomes one ``MinidbError``, after every Ray process of this start has been ended.
    """
    try:
        import ray
    except ImportError:
        raise MinidbError("backend='ray' needs Ray: pip install 'ray>=2.40'") from None
    quiet_ray_messages()
    if address:
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        except Exception as err:
            _end_failed_start(ray)
            raise MinidbError(f"could not join the Ray cluster at {address} ({_why(err)}); "
                              "check that it runs and the address (or MINIDB_RAY_ADDRESS), or "
                              "leave the address out to start a local Ray instance") from None
        return
    for attempt in (1, 2):
        try:  # Ray's start-up chatter stays out of minidb's output; failures are raised below
            with gcs_wait():
                ray.init(address="local", include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR, num_cpus=num_cpus or os.cpu_count() or 2)
            return
        except Exception as err:
            _end_failed_start(ray)
            if attempt == 1:
                log.info("could not start a local Ray instance (%s); retrying once", _why(err))
                continue
            raise MinidbError(f"could not start a local Ray instance, twice ({_why(err)}); "
                              "nothing was left running. Retry when the machine is less busy, "
                              "or use backend='inline'") from None
        except BaseException:
            _end_failed_start(ray)
            raise  # Ctrl-C stays Ctrl-C


def _why(err: BaseException) -> str:
    """An exception as one short line: its type and the first line of its message."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else 'no message'}"


@contextlib.contextmanager
def gcs_wait() -> Iterator[None]:
    """Let Ray wait longer for its GCS server on a busy machine: ``GCS_WAIT_S`` (Ray's own 30 s)
    times ``busy_factor``, at most 300 s, through Ray's ``RAY_gcs_server_port_wait_time_s``.
    A value the user set is kept."""
    name = "RAY_gcs_server_port_wait_time_s"
    if name in os.environ:
        yield
        return
    os.environ[name] = str(int(min(300, GCS_WAIT_S * busy_factor())))
    try:
        yield
    finally:
        os.environ.pop(name, None)


def quiet_ray_messages() -> None:
    """Keep what Ray's own processes send the driver (the raylet's "N PYTHON worker processes
    have been started ... startup concurrency" warning, coloured) out of minidb's output: it
    goes to the ``minidb.ray`` logger at DEBUG level. Ray prints these from a thread that
    ``ray.init`` starts, through ``ray._private.worker.print_to_stdstream``, and has no option
    to turn that off; the workers' own output is already off (``log_to_driver=False``). Where a
    Ray version has no such function, this does nothing."""
    try:
        import ray._private.worker as ray_worker
    except ImportError:
        return
    original = getattr(ray_worker, "print_to_stdstream", None)
    if original is None or getattr(original, "minidb_quiet", False):
        return
    ray_log = logging.getLogger("minidb.ray")

    def quiet(data: dict, *args, **kwargs):
        if data.get("pid") in ("raylet", "gcs_server", "autoscaler"):
            for line in data.get("lines", []):
                ray_log.debug("%s: %s", data.get("pid"), line)
            return None
        return original(data, *args, **kwargs)

    quiet.minidb_quiet = True
    ray_worker.print_to_stdstream = quiet


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
    """A failed call: its one-line error, whether the node itself died, and whether it died
    in its own constructor (``init_error``: a start that fails the same way when retried)."""

    def __init__(self, error: MinidbError, dead: bool, init_error: bool = False):
        self.error, self.dead, self.init_error = error, dead, init_error


class _StartFailed(Exception):
    """Starting the nodes failed with ``error``; ``retry``: a second try may succeed."""

    def __init__(self, error: MinidbError, retry: bool):
        super().__init__(str(error))
        self.error, self.retry = error, retry


__all__ = ["InlineBackend", "NodePool", "RayBackend", "node_pool", "start_ray", "start_timeout"]
