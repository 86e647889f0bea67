"""The one registry for every pluggable part of minidb.

A replacement policy, a partitioner, a join algorithm or a commit protocol is a small class that
registers itself under a *kind* and a *name*::

    from minidb.plugins import register

    @register("buffer_policy", "fifo")
    class FifoPolicy(ReplacementPolicy):
        ...

Experiments, labs, the explorer and the autograder then select it by name
(``minidb.connect(buffer_policy="fifo")``). A student's class registers exactly like a built-in.

The kinds (``KINDS`` below holds the same, for code and tests):

=================  ============================================  ================================
kind               base class                                    a student's, in the labs
=================  ============================================  ================================
buffer_policy      ``minidb.buffer.policy.ReplacementPolicy``     ``labs/lab1_gamma/policy.py``
partitioner        ``minidb.parallel.partitioners.Partitioner``   ``labs/lab1_gamma/partitioner.py``
join               ``minidb.exec.join.base.JoinAlgorithm``        ``labs/lab2_joins/hybrid_hash.py``
unfix_gatherer     ``minidb.volcano.unfix.UnfixGatherer``         ``labs/lab3_volcano/unfix.py``
lhstar_addressing  ``minidb.sdds.addressing.Addressing``          ``labs/lab4_lhstar/addressing.py``
commit             ``minidb.txn.commit.base.CommitProtocol``      ``labs/lab5_commit/commit.py``
hardware_profile   ``minidb.cost.profiles.HardwareProfile``       -
experiment         ``minidb.experiments.registry.Experiment``     -
=================  ============================================  ================================

The built-ins of a kind are ``names(kind)`` (``minidb list`` for experiments).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from minidb.errors import UnknownPluginError

T = TypeVar("T")

_REGISTRY: dict[str, dict[str, Any]] = {}

#: kind -> (its base class, the file a student writes one in, or None)
KINDS: dict[str, tuple[str, str | None]] = {
    "buffer_policy": ("minidb.buffer.policy.ReplacementPolicy", "labs/lab1_gamma/policy.py"),
    "partitioner": ("minidb.parallel.partitioners.Partitioner", "labs/lab1_gamma/partitioner.py"),
    "join": ("minidb.exec.join.base.JoinAlgorithm", "labs/lab2_joins/hybrid_hash.py"),
    "unfix_gatherer": ("minidb.volcano.unfix.UnfixGatherer", "labs/lab3_volcano/unfix.py"),
    "lhstar_addressing": ("minidb.sdds.addressing.Addressing", "labs/lab4_lhstar/addressing.py"),
    "commit": ("minidb.txn.commit.base.CommitProtocol", "labs/lab5_commit/commit.py"),
    "hardware_profile": ("minidb.cost.profiles.HardwareProfile", None),
    "experiment": ("minidb.experiments.registry.Experiment", None),
}


def register(kind: str, name: str) -> Callable[[T], T]:
    """Class decorator: make ``cls`` available as plugin ``name`` of ``kind``.

    Registering a name again replaces the earlier class, so a student's implementation can take
    the place of a built-in one.
    """

    def decorate(cls: T) -> T:
        _REGISTRY.setdefault(kind, {})[name.lower()] = cls
        return cls

    return decorate


def lookup(kind: str, name: str) -> Any:
    """Return the class registered as ``name`` of ``kind``, or raise a one-line error."""
    _load_builtins()
    known = _REGISTRY.get(kind, {})
    try:
        return known[name.lower()]
    except KeyError:
        choices = ", ".join(sorted(known)) or "none"
        raise UnknownPluginError(
            f"unknown {kind.replace('_', ' ')} {name!r}; choose one of: {choices}"
        ) from None


def names(kind: str) -> list[str]:
    """Names registered for ``kind``, sorted."""
    _load_builtins()
    return sorted(_REGISTRY.get(kind, {}))


def _load_builtins() -> None:
    """Import the modules whose classes register themselves, so lookups see the built-ins."""
    import minidb.buffer  # noqa: F401  (registers the replacement policies)
    import minidb.cost  # noqa: F401  (registers the hardware profiles)
    import minidb.exec.join  # noqa: F401  (registers the join algorithms)
    import minidb.parallel.partitioners  # noqa: F401  (registers the partitioners)
    import minidb.sdds.addressing  # noqa: F401  (registers LH*'s addressing rules)
    import minidb.sdds.table  # noqa: F401  (registers the lh_star partitioner)
    import minidb.txn.commit  # noqa: F401  (registers the commit protocols)
    import minidb.volcano.unfix  # noqa: F401  (registers the grouped unfix gatherer)
