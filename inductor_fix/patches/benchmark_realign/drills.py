"""benchmark-realign's drift drills (``python test/drift.py``; the format: cache-key's ``drills.py``)."""

from __future__ import annotations

__all__ = ["DRILLS", "UNDER"]

#: Its targets move only in the general drills of ``test/drift.py``.
DRILLS: dict = {}
#: It needs ``TritonTemplateCaller`` (it recognises template choices by it).
UNDER = {"renamed-class": "unsupported"}
