"""An example topos plugin: the Lion optimizer and an f16 element type."""

from topos_lion.elements import f16
from topos_lion.lion import Lion

__all__ = ["Lion", "f16"]
