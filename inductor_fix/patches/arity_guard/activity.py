"""What arity-guard records when it acts (``inductor_fix.activity()["arity-guard"]``)."""

from __future__ import annotations

from ..._activity import Activity, Kind

__all__ = ["ACTIVITY", "KINDS"]


def _mismatch(verb: str):
    return lambda d: (f"{verb} {d['kernel']} of {d['template']}: {len(d['parameters'])} parameters, "
                      f"{len(d['arguments'])} arguments")


KINDS = (
    Kind("regenerated", "a codegen-cache hit whose kernel did not fit its arguments, generated again uncached",
         _mismatch("regenerated")),
    Kind("excluded", "a choice whose kernel cannot take its benchmark request's arguments, left out of autotuning",
         _mismatch("excluded")),
    Kind("excluded_at_benchmark", "a choice whose kernel cannot take the tensors the autotuner passes, timed inf",
         _mismatch("timed inf")),
)
ACTIVITY = Activity("arity-guard", KINDS)
