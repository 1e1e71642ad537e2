"""What a patch is, and the checks every patch's ``decide`` shares.

A patch is one folder, ``inductor_fix/patches/<module>/``: its ``__init__`` holds the
:class:`Patch` entry ``PATCH`` (and imports its fix, ``fix.py``), and optional parts that
generic code reads as typed records through :func:`inductor_fix.check.parts.part`:
``check`` (its ``inductor-fix check`` workloads and CPU-harness seams), ``bench`` (its
``tools/bench`` measurement) and ``drills`` (its drift drills). The table never imports a part.
Its diff is ``patches/<Patch.diff>`` and its tests ``test/<module>/``.

A :class:`Patch` names its targets (``"Class.attribute"`` in
``torch._inductor.select_algorithm``, or ``"module:Class.attribute"`` in another module of
Inductor, each with the factory that wraps it; each module is patched when it loads), the
upstream issue and PR, the stock releases that have the bug (a ``packaging``
specifier, for tests and tools: whether a build needs a patch is decided by
behaviour, never by this range), the diff in ``patches/`` that carries it
upstream, and when it can be deleted. ``decide`` inspects the live module and
returns what the factories need, or raises :class:`NotNeeded` /
:class:`Unsupported` with a one-line reason; it patches nothing.

Nothing here imports torch: ``import inductor_fix`` must stay cheap.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import textwrap
from types import CodeType, ModuleType
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from .._activity import Activity, Kind
from .._launch import GRID_VALUES
from .._versions import release_of

__all__ = [
    "CODEGEN_CACHE_ADDED",
    "aliasing_pattern",
    "FINGERPRINTS_FILE",
    "GRID_VALUES",
    "Kind",
    "MODULE",
    "NotNeeded",
    "Patch",
    "Unsupported",
    "fingerprint",
    "function_of",
    "in_releases",
    "qualified_name",
    "kernel_parameters",
    "recorded_fingerprints",
    "require_class",
    "require_codegen_cache",
    "require_function",
    "require_parameters",
    "source_fingerprint",
    "split_target",
    "target_module",
    "target_owner",
    "tensor_metas",
]

MODULE = "torch._inductor.select_algorithm"
#: ``GeneratedCodeCache`` first appears here, off by default
#: (``enable_caching_generated_triton_templates=False``; on by default from 2.9.0).
CODEGEN_CACHE_ADDED = "2.8.0"


class NotNeeded(Exception):
    """This torch does not have what the patch fixes."""


class Unsupported(Exception):
    """This torch's internals are not what the patch recognises."""


#: ``factory(original, context)`` returns the wrapper installed in place of ``original``
#: (the object in the class ``__dict__``: a function, or a classmethod for classmethods).
Factory = Callable[[Any, Any], Any]


class Patch(NamedTuple):
    """One patch of the table; its folder holds everything else about it. (A NamedTuple,
    not a dataclass: a tenth of the cost at ``import inductor_fix``.)"""

    name: str
    #: ``"Class.attribute"`` (of :data:`MODULE`) or ``"module:Class.attribute"`` -> wrapper factory;
    #: what is wrapped is exactly these keys. A module a release lacks is never loaded, so a
    #: patch may name the module each release keeps its target in.
    targets: Mapping[str, Factory]
    #: ``decide(module)`` -> the context the factories take, for the targets in ``module`` (called
    #: once per module, when it loads); raises NotNeeded or Unsupported.
    decide: Callable[[ModuleType], Any]
    #: What the patch does once applied, for status().
    effect: str
    upstream: str
    #: Stock torch releases with the bug, as a ``packaging`` specifier.
    affected: str
    #: When the patch can be deleted from this package, and a job stop needing it (the job
    #: report's advice says it for each patch that acted).
    delete_when: str
    #: The files in the repository's ``patches/`` folder that carry the same fix upstream (the
    #: first is the one the version matrix applies).
    diffs: tuple[str, ...]
    #: What it did in this process, by kind (each :class:`Kind` says how it reads).
    activity: Activity
    #: Called after install; raises Unsupported if the patched module misbehaves.
    verify: Callable[[ModuleType], None] | None = None
    #: Releases whose internals the patch fits, as a ``packaging`` specifier ("": any);
    #: on an affected release outside it the bug stays (``decide`` says unsupported).
    supported: str = ""
    #: The Python package of its folder (its parts are found there); default
    #: ``inductor_fix.patches.<module>``.
    package: str = ""
    #: False for a patch that only saves cost (without it nothing crashes and no kernel is
    #: wrong): its state does not decide ``status().protected``, and a job report needs it on
    #: for nothing (``needed: no`` holds with it off).
    protects: bool = True

    @property
    def module(self) -> str:
        """The patch's folder name in ``inductor_fix/patches/`` and in ``test/``."""
        return self.name.replace("-", "_")

    @property
    def diff(self) -> str:
        """The diff the version matrix applies (the first of :attr:`diffs`)."""
        return self.diffs[0]

    @property
    def target(self) -> str:
        """Every target as a full dotted name, comma-separated."""
        return ", ".join(qualified_name(target) for target in self.targets)

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules its targets live in, in the order first named."""
        return tuple(dict.fromkeys(target_module(target) for target in self.targets))

    def targets_in(self, module: str) -> dict[str, Factory]:
        """Its targets in module ``module`` (a full module name), with their factories."""
        return {target: factory for target, factory in self.targets.items() if target_module(target) == module}

    def is_affected(self, torch_version: str) -> bool:
        """Whether stock ``torch_version`` (``"2.14.1+cu130"``, a dev build counts as its
        release) has the bug; for tests and tools, not for deciding to patch."""
        return in_releases(self.affected, torch_version)

    def fits(self, torch_version: str) -> bool:
        """Whether the patch fits ``torch_version``'s internals (:attr:`supported`)."""
        return in_releases(self.supported, torch_version)

    def recorded_fingerprints(self, release: str) -> dict[str, str]:
        """{target: fingerprint} of this patch's targets as recorded for ``release``
        (``"2.14.1"``); empty where none is. Raises Unsupported if the data file is unreadable."""
        table = recorded_fingerprints().get(release, {})
        return {target: table[target] for target in self.targets if target in table}

    def check_fingerprints(self, module: ModuleType, torch_version: str) -> None:
        """Raise Unsupported if a function this patch wraps differs from the source
        recorded for this torch release; releases with no record pass, and so do
        pre-release builds (``2.15.0.dev...``: not the released source of 2.15.0)."""
        if _is_prerelease(torch_version):
            return
        recorded = self.recorded_fingerprints(str(release_of(torch_version)))
        for target, expected in recorded.items():
            if target_module(target) != module.__name__:
                continue
            owner_name, attribute = split_target(target)
            try:
                actual = source_fingerprint(function_of(getattr(module, owner_name).__dict__[attribute]))
            except (OSError, TypeError) as error:
                raise Unsupported(f"cannot read the source of {target}: {error}") from error
            if actual != expected:
                raise Unsupported(f"{target} differs from torch {release_of(torch_version)}'s released source "
                                  f"(fingerprint {actual}, recorded {expected})")


def _is_prerelease(torch_version: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(torch_version).is_prerelease
    except InvalidVersion:
        return False


def in_releases(specifier: str, torch_version: str) -> bool:
    """Whether ``torch_version`` (a dev build counts as its release) is in ``specifier``."""
    from packaging.specifiers import SpecifierSet  # lazily: only tests and tools ask

    release = release_of(torch_version)
    return release is not None and release in SpecifierSet(specifier)


#: The package data file ``tools/record_fingerprints.py --write`` writes: ``{"releases": {release:
#: {target: fingerprint}}}``, each function of :data:`MODULE` once, whichever patches wrap it.
FINGERPRINTS_FILE = "fingerprints.json"


@functools.cache
def recorded_fingerprints() -> Mapping[str, Mapping[str, str]]:
    """torch release (``"2.14.1"``) -> {``"Class.attribute"``: :func:`fingerprint` of its
    released source}, every target of every patch, read once from :data:`FINGERPRINTS_FILE`
    (``inductor_fix/patches/``). Raises Unsupported if it is missing or malformed (a broken
    install): then nothing is recognised, so nothing is patched."""
    import json
    from importlib import resources

    try:
        text = resources.files(__package__).joinpath(FINGERPRINTS_FILE).read_text(encoding="utf-8")
        releases = json.loads(text)["releases"]
        if not all(isinstance(table, dict) for table in releases.values()):
            raise TypeError("a release's entry is not an object")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise Unsupported(f"the recorded source fingerprints ({__package__}/{FINGERPRINTS_FILE}) cannot be read: "
                          f"{type(error).__name__}: {error}") from error
    return releases


def fingerprint(source: str) -> str:
    """16 hex digits of SHA-256 over ``source`` with indentation, blank lines,
    comment-only lines and trailing spaces normalised away: a wrapped function
    whose source moved on a recorded release (a patched build, a local edit, a
    mislabelled wheel) is not recognised. ``tools/record_fingerprints.py --write``
    records them from release wheels in :data:`FINGERPRINTS_FILE`."""
    lines = []
    for line in textwrap.dedent(source).splitlines():
        stripped = line.rstrip()
        if stripped and not stripped.lstrip().startswith("#"):
            lines.append(stripped)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


#: id(code object) -> (that code object, :func:`fingerprint` of its function's source). Holding
#: the code object keeps its id from being reused; the entries are the few wrapped functions.
_SOURCE_FINGERPRINTS: dict[int, tuple[CodeType, str]] = {}


def source_fingerprint(function: Any) -> str:
    """:func:`fingerprint` of ``function``'s source, read once per code object: reading it
    (``inspect.getsource``) is most of an apply/remove cycle, and a code object's source does
    not change while it lives. Raises OSError or TypeError as ``inspect.getsource`` does."""
    # getsource reads the function at the end of a ``__wrapped__`` chain: key by that one's
    # code (every wrapper one factory makes shares the factory's code object).
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    if code is None:  # not a Python function: getsource says why
        return fingerprint(inspect.getsource(function))
    cached = _SOURCE_FINGERPRINTS.get(id(code))
    if cached is not None and cached[0] is code:
        return cached[1]
    value = fingerprint(inspect.getsource(function))
    _SOURCE_FINGERPRINTS[id(code)] = (code, value)
    return value


def split_target(target: str) -> tuple[str, str]:
    """``("Class", "attribute")`` of a target, ``"Class.attribute"`` or ``"module:Class.attribute"``;
    ValueError if it is neither."""
    owner, attribute = target.rpartition(":")[2].split(".")
    return owner, attribute


def target_owner(target: str) -> type | None:
    """The class ``target`` names, where its module is loaded in this process; None elsewhere
    (a module this release lacks, or one not imported yet). Imports nothing."""
    import sys

    owner = getattr(sys.modules.get(target_module(target)), split_target(target)[0], None)
    return owner if isinstance(owner, type) else None


def target_module(target: str) -> str:
    """The module a target lives in: its ``"module:"`` prefix, else :data:`MODULE`."""
    module, _, _ = target.rpartition(":")
    return module or MODULE


def qualified_name(target: str) -> str:
    """``"torch._inductor.select_algorithm.TritonTemplate.generate"`` for ``"TritonTemplate.generate"``."""
    return f"{target_module(target)}.{target.rpartition(':')[2]}"


def function_of(member: Any) -> Any:
    """The plain function behind a class ``__dict__`` entry (a classmethod's ``__func__``)."""
    return member.__func__ if isinstance(member, (classmethod, staticmethod)) else member


def require_function(module: ModuleType, target: str, kind: type | None = None) -> Any:
    """The function behind ``target``; Unsupported if absent or not a plain function
    (or, with ``kind``, not wrapped in ``kind``, e.g. ``classmethod``)."""
    owner_name, attribute = split_target(target)
    owner = getattr(module, owner_name, None)
    if not isinstance(owner, type):
        raise Unsupported(f"{_short(module)}.{owner_name} is missing")
    member = owner.__dict__.get(attribute)
    if kind is not None and not isinstance(member, kind):
        raise Unsupported(f"{target} is not a {kind.__name__} in this torch")
    if not inspect.isfunction(function_of(member)):
        raise Unsupported(f"{target} is not a plain function (this torch's internals, or another library's "
                          "wrapper this package does not recognise)")
    return function_of(member)


def require_parameters(module: ModuleType, target: str, names: tuple[str, ...], kind: type | None = None) -> Any:
    """:func:`require_function`, also Unsupported if a parameter of ``names`` is missing."""
    function = require_function(module, target, kind)
    missing = [name for name in names if name not in inspect.signature(function).parameters]
    if missing:
        raise Unsupported(f"{target} has no {', '.join(repr(n) for n in missing)} parameter")
    return function


def require_class(module: ModuleType, name: str) -> type:
    """``module.<name>`` if it is a class; Unsupported if not."""
    value = getattr(module, name, None)
    if not isinstance(value, type):
        raise Unsupported(f"{_short(module)}.{name} is missing")
    return value


def _short(module: ModuleType) -> str:
    """``select_algorithm`` for ``torch._inductor.select_algorithm``: how messages name a module."""
    return getattr(module, "__name__", "?").rpartition(".")[2]


def require_codegen_cache(module: ModuleType) -> None:
    """NotNeeded on a torch without the Triton template codegen cache (up to 2.7)."""
    if not hasattr(module, "GeneratedCodeCache"):
        raise NotNeeded(f"this torch has no Triton template codegen cache (added in {CODEGEN_CACHE_ADDED})")


def aliasing_pattern(input_nodes: Sequence[Any]) -> tuple[int, ...]:
    """Which input nodes are the same buffer, independent of the buffer names.

    Each node gets the label of its buffer name (``node.get_name()``, the name every
    template's ``def_kernel`` deduplicates its inputs by: Triton's and CUTLASS's), labels
    given in order of first appearance: a set partition in canonical (restricted growth) form.

    >>> class N:
    ...     def __init__(self, name): self.name = name
    ...     def get_name(self): return self.name
    >>> aliasing_pattern([N("x"), N("x")]), aliasing_pattern([N("a"), N("b")])
    ((0, 0), (0, 1))
    >>> aliasing_pattern([N("c"), N("buf3"), N("c")])
    (0, 1, 0)
    """
    labels: dict[str, int] = {}
    return tuple(labels.setdefault(node.get_name(), len(labels)) for node in input_nodes)


# --- benchmark requests: facts shared by the arity guard, check's CPU harness and the tests ----



def tensor_metas(meta: Any) -> list[Any]:
    """A benchmark request's ``input_tensor_meta``/``output_tensor_meta`` as a list
    (each is one ``TensorMeta`` or a list of them)."""
    return list(meta) if isinstance(meta, (list, tuple)) else [meta]


def kernel_parameters(bmreq: Any) -> tuple[str, ...]:
    """Parameter names of the kernel ``bmreq`` will load (PyCodeCache returns the
    module ``generate_and_load`` already loaded)."""
    from torch._inductor.codecache import PyCodeCache

    module = PyCodeCache.load_by_key_path(bmreq.module_cache_key, bmreq.module_path)
    function = getattr(module, bmreq.kernel_name).fn  # a triton JITFunction
    names = getattr(function, "arg_names", None)  # 100x cheaper than inspect.signature
    return tuple(names) if names is not None else tuple(inspect.signature(function.fn).parameters)
