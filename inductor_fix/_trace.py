"""The package's decisions and actions as structured trace artifacts (``TORCH_TRACE=DIR``).

``TORCH_TRACE`` is where PyTorch users look when a compile misbehaves: torch writes a
structured log there and ``tlparse`` renders it. Each patch's decision (applied, not
needed, unsupported, and why) and each thing a patch did (a realigned choice, a
prevented codegen-cache collision ...) become artifacts named ``inductor_fix_*``
(JSON), beside Inductor's own ones. Without ``TORCH_TRACE`` this costs one check of
the trace logger's handlers; nothing of torch is imported here.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["artifact"]


def artifact(name: str, payload: dict[str, Any]) -> None:
    """Write ``payload`` as the JSON artifact ``name`` to torch's structured trace, if one is on.

    Never raises: tracing is for reading afterwards, not a reason to break a compile.
    """
    internal = sys.modules.get("torch._logging._internal")
    if internal is None or not getattr(internal, "trace_log", None) or not internal.trace_log.handlers:
        return
    try:
        import json

        text = json.dumps(payload, default=str)
        # expect_trace_id=False: a decision is often made outside any compile (at import).
        internal.trace_structured("artifact", metadata_fn=lambda: {"name": name, "encoding": "json"},
                                  payload_fn=lambda: text, expect_trace_id=False)
    except Exception as error:
        import logging

        logging.getLogger("inductor_fix").debug("trace artifact %s not written: %s: %s", name,
                                                type(error).__name__, error)
