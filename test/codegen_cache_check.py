"""Inductor's own codegen-cache check as a second oracle (``TritonTemplate.test_cache``).

``TritonTemplate.test_cache = True`` (a class attribute in
``torch/_inductor/select_algorithm.py``, 2.8.0-2.15.0 alike) makes every
codegen-cache hit in ``TritonTemplate.generate_and_load`` call its nested
``maybe_test_cache``: the kernel is generated again from the *current* input
nodes, without the cache, and code, extra, ``kernel.args.input_buffers``,
``prologue_supported_inputs`` and ``kernel.args.sizevars`` must equal the
replayed entry's, else ``AssertionError("Generated code cache results in wrong
output")`` (an ``assert`` statement up to 2.13, so ``python -O`` skips it; an
explicit ``raise`` from 2.14). A stale entry (pytorch/pytorch#188069: a kernel of
``bmm(x, x)`` replayed for ``bmm(a, b)``) fails it at codegen time, before any
launch. It only runs on hits: 2.8.x ships the codegen cache off, and only templates
created with ``cache_codegen_enabled_for_template=True`` use it (mm, bmm,
mm_plus_mm; the depthwise conv from 2.12) - never the FlexAttention templates.

The oracle must not pass by not running, so :func:`codegen_cache_check` counts:

- ``hits``: ``counters["inductor"]["generated_module_cache_hit"]`` rises inside a
  ``generate_and_load`` call (``GeneratedCodeCache.get_entry`` bumps it);
- ``checks``: renders of a template kernel (``TritonTemplateKernel.render``) whose
  caller chain holds Inductor's ``maybe_test_cache`` frame - the regeneration the
  check compares with. On a hit nothing else renders (the entry's events are
  replayed), so every hit must show exactly one such render;
- ``passed`` / ``failed``: checked calls that returned, or raised that AssertionError.

A wrapper of ours that turned caching off leaves ``hits`` at 0; one that served hits
some other way, or an Inductor whose check stopped running, leaves ``unchecked``
non-empty. The property: ``hits > 0`` on a sequence that must hit, ``checks == hits``
and ``failed == 0``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
from typing import Any, Iterator
from unittest import mock

from torch._dynamo.utils import counters

__all__ = ["WRONG_OUTPUT", "CacheCheck", "codegen_cache_check"]

WRONG_OUTPUT = "Generated code cache results in wrong output"


@dataclasses.dataclass
class CacheCheck:
    """What Inductor's codegen-cache check did while :func:`codegen_cache_check` was active."""

    #: False on a torch without ``TritonTemplate.test_cache``: nothing was checked.
    available: bool = True
    hits: int = 0  # generate_and_load calls served from the codegen cache
    checks: int = 0  # of those, how many Inductor regenerated in maybe_test_cache
    passed: int = 0
    failed: int = 0
    #: (template, "hits/checks") of every hit the check did not regenerate: must stay empty.
    unchecked: list[str] = dataclasses.field(default_factory=list)


def _in_maybe_test_cache(depth: int = 6) -> bool:
    """Whether a caller frame (up to ``depth`` up) is select_algorithm's ``maybe_test_cache``."""
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return False
        code = frame.f_code
        if code.co_name == "maybe_test_cache" and code.co_filename.endswith("select_algorithm.py"):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def codegen_cache_check() -> Iterator[CacheCheck]:
    """``TritonTemplate.test_cache = True`` for the block; yields the :class:`CacheCheck` tally.

    Wraps whatever ``generate_and_load`` and ``render`` are installed at entry (enter it
    after ``inductor_fix.applied()`` / ``removed()``); restores everything on exit. On a
    torch without the check (up to 2.7: no ``test_cache``) it yields a tally with
    ``available`` False and changes nothing.
    """
    from torch._inductor import select_algorithm

    if not hasattr(select_algorithm.TritonTemplate, "test_cache"):
        yield CacheCheck(available=False)
        return

    if sys.flags.optimize:  # up to 2.13 the comparison is an assert statement, which -O strips
        raise RuntimeError("Inductor's codegen-cache check cannot be trusted under python -O")
    tally = CacheCheck()
    kernel_type = select_algorithm.TritonTemplate.kernel_type
    render = kernel_type.render
    generate_and_load = select_algorithm.TritonTemplate.generate_and_load
    in_check = [0]  # renders from maybe_test_cache during the current generate_and_load

    @functools.wraps(render)
    def counted_render(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _in_maybe_test_cache():
            in_check[0] += 1
        return render(self, *args, **kwargs)

    @functools.wraps(generate_and_load)
    def counted_generate_and_load(self: Any, *args: Any, **kwargs: Any) -> Any:
        hits_before = counters["inductor"]["generated_module_cache_hit"]
        outer, in_check[0] = in_check[0], 0
        try:
            result = generate_and_load(self, *args, **kwargs)
        except AssertionError as error:
            if WRONG_OUTPUT in str(error):
                tally.failed += 1
            raise
        else:
            if in_check[0]:
                tally.passed += 1
        finally:
            hit = counters["inductor"]["generated_module_cache_hit"] - hits_before
            tally.hits += hit
            tally.checks += in_check[0]
            if hit and in_check[0] != hit:
                tally.unchecked.append(f"{self.name}: {hit} hit(s), {in_check[0]} check(s)")
            in_check[0] = outer
        return result

    with mock.patch.object(select_algorithm.TritonTemplate, "test_cache", True), \
            mock.patch.object(kernel_type, "render", counted_render), \
            mock.patch.object(select_algorithm.TritonTemplate, "generate_and_load", counted_generate_and_load):
        yield tally
