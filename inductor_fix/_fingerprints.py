"""Source fingerprints of the upstream functions this package wraps.

For a torch release listed in :data:`RECORDED`, a wrapped function whose source
differs from the recorded one (a patched build, a local edit, a mislabelled
wheel) is not recognised and is left alone. Releases not listed (nightlies,
future point releases) are judged by the behavioural probe alone.

Regenerate the table with ``python tools/record_fingerprints.py``.
"""

from __future__ import annotations

import hashlib
import inspect
import textwrap
from typing import Any

__all__ = ["RECORDED", "fingerprint", "fingerprint_of"]


def fingerprint(source: str) -> str:
    """16 hex digits of SHA-256 over ``source`` with indentation, blank lines,
    comment-only lines and trailing spaces normalised away."""
    lines = []
    for line in textwrap.dedent(source).splitlines():
        stripped = line.rstrip()
        if stripped and not stripped.lstrip().startswith("#"):
            lines.append(stripped)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def fingerprint_of(function: Any) -> str:
    """Fingerprint of a live function's source; OSError/TypeError if it has none."""
    return fingerprint(inspect.getsource(function))


#: torch release -> {"Class.method": fingerprint}. Written by tools/record_fingerprints.py.
RECORDED: dict[str, dict[str, str]] = {
    "2.7.1": {
        "TritonTemplate.generate": "1b004b1774c6e260",
        "AlgorithmSelectorCache.__call__": "127d0da000aae13a",
    },
    "2.8.0": {
        "GeneratedCodeCache.make_key": "94bc2d2dd108113b",
        "TritonTemplate.generate": "2cae7b880c44afb0",
        "AlgorithmSelectorCache.__call__": "00a69592a8475baa",
        "AlgorithmSelectorCache.benchmark_choice": "d3e388246ea845f7",
        "AlgorithmSelectorCache.benchmark_in_current_process": "447b9d4cc187ce79",
    },
    "2.9.1": {
        "GeneratedCodeCache.make_key": "7563a1baea01832d",
        "TritonTemplate.generate": "e4238e2055f5cc0a",
        "AlgorithmSelectorCache.__call__": "0afa3df746f01403",
        "AlgorithmSelectorCache.benchmark_choice": "ae85b4e3b7166aae",
        "AlgorithmSelectorCache.benchmark_in_current_process": "90b73b3dfa550d60",
    },
    "2.10.0": {
        "GeneratedCodeCache.make_key": "ba27f3920655fb23",
        "TritonTemplate.generate": "3011e492fa28288f",
        "AlgorithmSelectorCache.__call__": "c3c7c7599f5116bd",
        "AlgorithmSelectorCache.benchmark_choice": "4b968e100498eecf",
        "AlgorithmSelectorCache.benchmark_in_current_process": "eebb15392d63f187",
    },
    "2.11.0": {
        "GeneratedCodeCache.make_key": "e22a59f370579361",
        "TritonTemplate.generate": "5360dac580d1200c",
        "AlgorithmSelectorCache.__call__": "9d07df572dfc3201",
        "AlgorithmSelectorCache.benchmark_choice": "4b968e100498eecf",
        "AlgorithmSelectorCache.benchmark_in_current_process": "eebb15392d63f187",
    },
    "2.12.0": {
        "GeneratedCodeCache.make_key": "6151fcbe763a213d",
        "TritonTemplate.generate": "eaedda2ba0b68d4c",
        "AlgorithmSelectorCache.__call__": "16ebe6c09910da2f",
        "AlgorithmSelectorCache.benchmark_choice": "4b968e100498eecf",
        "AlgorithmSelectorCache.benchmark_in_current_process": "22f99c763f0cb0be",
    },
    "2.13.0": {
        "GeneratedCodeCache.make_key": "6ef5eb2116ade276",
        "TritonTemplate.generate": "51bb1ab73b5055fa",
        "AlgorithmSelectorCache.__call__": "16ebe6c09910da2f",
        "AlgorithmSelectorCache.benchmark_choice": "222149c055cb23ff",
        "AlgorithmSelectorCache.benchmark_in_current_process": "22f99c763f0cb0be",
    },
    "2.14.1": {
        "GeneratedCodeCache.make_key": "1826ce11b0581fe5",
        "TritonTemplate.generate": "dc98fd8927465c63",
        "AlgorithmSelectorCache.__call__": "24e0e08ee1c18e4a",
        "AlgorithmSelectorCache.benchmark_choice": "222149c055cb23ff",
        "AlgorithmSelectorCache.benchmark_in_current_process": "22f99c763f0cb0be",
    },
    "2.15.0": {
        "GeneratedCodeCache.make_key": "197e54870af96817",
        "TritonTemplate.generate": "dc98fd8927465c63",
        "AlgorithmSelectorCache.__call__": "51d116f0db14a988",
        "AlgorithmSelectorCache.benchmark_choice": "49b776e8964da36c",
        "AlgorithmSelectorCache.benchmark_in_current_process": "22f99c763f0cb0be",
    },
}
