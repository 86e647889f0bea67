"""Scalable distributed data structures: LH* (the LH* paper of the course, Section 2).

``LHStarFile`` is the file (servers, split coordinator, clients with images);
``minidb.sdds.addressing`` holds LH*'s arithmetic as pure functions.
"""

from minidb.sdds.addressing import (
    MAX_FORWARDS,
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
)
from minidb.sdds.servers import pseudokey

__all__ = ["MAX_FORWARDS", "Client", "FileState", "Image", "LHStarError", "LHStarFile",
           "LHStarInvariantError", "Messages", "Operation", "adjust_image", "client_address", "h",
           "pseudokey", "server_address"]
