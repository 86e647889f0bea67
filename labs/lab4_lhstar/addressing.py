"""Lab 4: LH*'s addressing rules (what you hand in, as ``addressing.py``).

Write the three methods below; the rules are in the lab (Part C) and in
``autograder/assignments/lab4/README.md``. This is the only place you write them: the lab
notebook imports this file (``from addressing import StudentAddressing``) and runs a whole LH*
file on it (``LHStarFile(addressing="student_lhstar")``), ``pytest`` runs the grader's public
cases on it, and ``python -m autograder submit lab4 --out submission.zip`` hands it in.

You may use ``h`` (the hash function of a level) and ``Image`` from ``minidb.sdds.addressing``.
"""

from minidb.plugins import register
from minidb.sdds.addressing import Addressing, Image, h


@register("lhstar_addressing", "student_lhstar")
class StudentAddressing(Addressing):
    """A client's address computation, a server's forwarding rule and the image adjustment."""

    def client_address(self, image, pseudokey, n0):
        """The bucket a client whose image is ``image`` = (i', n') sends key ``pseudokey`` to."""
        # BEGIN SOLUTION: Lab 4: linear hashing's address, computed on the client's image
        a = h(image.level, pseudokey, n0)
        if a < image.split:  # the client believes bucket a has split: use the next level
            a = h(image.level + 1, pseudokey, n0)
        return a
        # END SOLUTION

    def server_address(self, address, level, pseudokey, n0):
        """``address`` if the key is home at this server (of level ``level``), otherwise the
        server to forward it to: never more than two forwards in all."""
        # BEGIN SOLUTION: Lab 4: the forwarding rule, h_j then h_(j-1)
        a1 = h(level, pseudokey, n0)
        if a1 == address:
            return address
        if level > 0:
            a2 = h(level - 1, pseudokey, n0)
            if address < a2 < a1:  # a1 may not exist yet; a2 does, and is closer
                a1 = a2
        return a1
        # END SOLUTION

    def adjust_image(self, image, address, level, n0):
        """The client's new image after an image adjustment message from the server it first
        addressed (``address``, of level ``level``)."""
        # BEGIN SOLUTION: Lab 4: the IAM rule
        if level <= image.level:
            return image
        i, n = level - 1, address + 1
        if n >= n0 << i:
            i, n = i + 1, 0
        return Image(i, n)
        # END SOLUTION
