"""The cost model behind the ``modeled_s`` clock (ARCHITECTURE.md, "Two clocks").

``profiles`` describes the papers' machines (and this one) by sourced constants; ``model`` turns
counters of work really done, per node and phase, into modeled seconds on one of them. Importing
this package registers the profiles under plugin kind ``hardware_profile``.
"""

from minidb.cost.model import (
    DEFAULT_OVERLAP,
    OPERATOR_COST_FIELD,
    ModeledTime,
    NodeTime,
    PhaseTime,
    UnknownOperatorKindError,
    WorkCounters,
    modeled_time,
    node_time,
    register_operator_kind,
)
from minidb.cost.profiles import (
    NUMERIC_FIELDS,
    PROFILES,
    SOURCE_KINDS,
    UNITS,
    HardwareProfile,
    get_profile,
    profile_names,
    register_profile,
    source_kind,
)

__all__ = [
    "DEFAULT_OVERLAP",
    "NUMERIC_FIELDS",
    "OPERATOR_COST_FIELD",
    "PROFILES",
    "SOURCE_KINDS",
    "UNITS",
    "HardwareProfile",
    "ModeledTime",
    "NodeTime",
    "PhaseTime",
    "UnknownOperatorKindError",
    "WorkCounters",
    "get_profile",
    "modeled_time",
    "node_time",
    "profile_names",
    "register_operator_kind",
    "register_profile",
    "source_kind",
]
