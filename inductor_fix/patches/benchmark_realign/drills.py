"""benchmark-realign's drift drills (``python test/drift.py``; the format:
:class:`~inductor_fix.check.parts.DrillsPart`)."""

from __future__ import annotations

from ...check.parts import DrillsPart

__all__ = ["PART"]

#: Its targets move only in the general drills of ``test/drift.py``; it needs
#: ``TritonTemplateCaller`` (it recognises template choices by it).
PART = DrillsPart(under={"renamed-class": "unsupported"})
