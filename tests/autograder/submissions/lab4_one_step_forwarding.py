"""Lab 4, a wrong answer for the grader tests: the server forwards to h_j(C) alone, skipping the h_(j-1) step."""

from minidb.plugins import register
from minidb.sdds.addressing import Addressing, Image, h


@register("lhstar_addressing", "student_lhstar")
class StudentAddressing(Addressing):
    """The rules of docs/facts.md ("LH*"), written out."""

    def client_address(self, image, pseudokey, n0):
        a = h(image.level, pseudokey, n0)
        return h(image.level + 1, pseudokey, n0) if a < image.split else a

    def server_address(self, address, level, pseudokey, n0):
        a1 = h(level, pseudokey, n0)
        return a1

    def adjust_image(self, image, address, level, n0):
        if level <= image.level:
            return image
        i, n = level - 1, address + 1
        return Image(i + 1, 0) if n >= n0 << i else Image(i, n)
