"""Scalable distributed data structures: LH* (the LH* paper of the course, Sections 2-4).

``LHStarFile`` is the file (servers, split coordinator, clients with images);
``minidb.sdds.addressing`` holds LH*'s arithmetic as pure functions (and the pluggable
``Addressing`` class of Lab 4); ``minidb.sdds.operators`` the select, join and semijoin that run
over LH* files and choose their strategy as they run.
"""

from minidb.sdds.addressing import (
    MAX_FORWARDS,
    Addressing,
    FileState,
    Image,
    adjust_image,
    client_address,
    h,
    server_address,
)
from minidb.sdds.lhstar import (
    Client,
    LHStarError,
    LHStarFile,
    LHStarInvariantError,
    Messages,
    Operation,
    SDDSDictionary,
)
from minidb.sdds.servers import pseudokey

__all__ = ["MAX_FORWARDS", "Addressing", "Client", "FileState", "Image", "LHStarError",
           "LHStarFile", "LHStarInvariantError", "Messages", "Operation", "SDDSDictionary",
           "adjust_image", "client_address", "h", "pseudokey", "server_address"]
