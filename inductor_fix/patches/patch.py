"""What a patch is: the entry of the table (:class:`Patch`), what its stock crash looks like
(:class:`Crash`), how it acts (:class:`Fix`, loaded only by what applies it: :func:`fix_of`),
and the two answers ``decide`` gives besides a context (:class:`NotNeeded`, :class:`Unsupported`).

A patch is one folder, ``inductor_fix/patches/<folder>/``: its ``__init__`` holds the
:class:`Patch` entry ``PATCH`` (what the patch is: name, upstream issue, releases, stock crash,
activity kinds; it imports only ``activity.py``), ``fix.py`` its :class:`Fix` ``FIX`` (targets,
``decide``, ``verify``), and optional parts that generic code reads as typed records through
:func:`inductor_fix.check.parts.part`: ``check`` (its ``inductor-fix check`` workloads and
CPU-harness seams), ``bench`` (its ``tools/bench`` measurement) and ``drills`` (its drift
drills). The table imports each entry, never a fix or a part: the job report reads the table
without importing any fix, and a fix that cannot be imported leaves its patch ``unsupported``
with the reason (:class:`FixError`), the others applied; each entry and fix is checked as it
loads against the field types its class declares (:func:`check_entry`, :func:`check_fields`).
Its diff is ``patches/<Patch.diff>`` and its tests ``test/<folder>/``.

A :class:`Fix` names the targets (``"Class.attribute"`` in ``torch._inductor.select_algorithm``,
or ``"module:Class.attribute"`` in another module of Inductor, each with the factory that wraps
it; each module is patched when it loads); its ``decide`` inspects the live module and returns
what the factories need, or raises :class:`NotNeeded` / :class:`Unsupported` with a one-line
reason; it patches nothing. A :class:`Patch` names the upstream issue and PR, the stock
releases that have the bug (a ``packaging`` specifier, for tests and tools: whether a build
needs a patch is decided by behaviour, never by this range), the diff in ``patches/`` that
carries it upstream, and when it can be deleted.

Beside it: :mod:`.target_names` (target names), :mod:`.require` (the ``require_*`` checks every ``decide`` shares),
:mod:`.fingerprints` (source fingerprints), :mod:`.aliasing` (the aliasing pattern and the
probe of a ``make_key``), :mod:`.triton_key` (that probe of the Triton codegen cache's key).
Nothing here imports torch: ``import inductor_fix`` must stay cheap.
"""

from __future__ import annotations

import collections.abc
import importlib
from types import ModuleType, UnionType
from typing import Any, Callable, Mapping, NamedTuple, Union, get_args, get_origin, get_type_hints

from .._activity import Activity, Kind
from .._triton_launch import LAUNCHER_ERRORS
from .._installed import release_of
from .target_names import target_module

__all__ = ["LAUNCHER_ERRORS", "Activity", "Crash", "Factory", "Fix", "FixError", "Kind", "NotNeeded", "Patch",
           "Unsupported", "check_entry", "check_fields", "fix_of", "in_releases", "killed_by", "unreadable_entry"]


class NotNeeded(Exception):
    """This torch does not have what the patch fixes."""


class Unsupported(Exception):
    """This torch's internals are not what the patch recognises."""


class FixError(Exception):
    """A patch's fix cannot be loaded (its ``fix.py`` raises as it imports, or defines no
    :class:`Fix` ``FIX``), or its entry could not be (:func:`unreadable_entry`): the message says which
    and why. The lifecycle leaves that patch ``unsupported`` with it and applies the others."""


def killed_by(signal: str) -> str:
    """How a process a signal ended is said (``"killed by SIGSEGV"``): ``check``'s words for such a
    case, which a :class:`Crash`'s ``signals`` match."""
    return f"killed by {signal}"


class Crash(NamedTuple):
    """What a patch's stock crash looks like, so that ``report``, ``check`` and the tests know it
    for the kind the patch fixes: ``errors``, regular expressions searched in an error as ``Type:
    message`` (a traceback's last line, a job report's ``exit_error``); ``signals``, where the
    crash is in native code (a kernel called through ctypes with a pointer too many), the names of
    the signals that end the process (``"SIGSEGV"``), as :func:`killed_by` says them; ``generic``,
    forms other failures end in too (a CUDA illegal memory access, Inductor's
    ``NoValidChoicesError``), which ``check`` counts as the crash where its case ran, and
    ``report`` only where the job line says the error was raised where the crash strikes.

    Where it strikes, so that a job report tells apart patches whose crashes end alike (a launch
    of the wrong arity ends the same in every Triton template); every patch's crash strikes in an
    autotuning selection, and a job line says an error raised outside one is none of them:
    ``selections``, the names of the autotuning selections it happens in (the ``name`` a lowering
    passes to Inductor's ``autotune_select_algorithm``: ``"flex_attention"``); ``choices``, the
    kinds of choice whose benchmark or build it happens in (a Triton template choice:
    ``"triton_<template name>"``, its name without the index, as Inductor's autotune cache keys
    it; any other choice: its class name, ``"CUDATemplateCaller"``; the job line's choice kinds
    are the same, ``_report_writer.choice_kind``). Empty: any selection (a patch that stops every
    crash of the kind, a net; the report prefers a patch that names where, and names the net
    beside it). ``raises``: regular expressions of the errors the patch itself raises where it
    stops a crash (``Type: message``), which the report names as the package's own, never as a
    stock crash."""

    errors: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()
    generic: tuple[str, ...] = ()
    selections: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    raises: tuple[str, ...] = ()

    @property
    def placed(self) -> bool:
        """Whether it names where it strikes (:attr:`selections` or :attr:`choices`)."""
        return bool(self.selections or self.choices)

    def strikes_in(self, selection: str | None, choice: str | None, choices: tuple[str, ...] | None) -> bool | None:
        """Whether it can strike in the autotuning ``selection`` (its name), while building or
        benchmarking a choice of kind ``choice`` (see the class), or else in a selection whose
        choices are of ``choices``' kinds; None (cannot tell) where what it names is not known."""
        if self.selections and selection is not None and selection not in self.selections:
            return False
        if self.choices and choice is not None:
            return choice in self.choices
        if self.choices and choices is not None:
            return any(kind in self.choices for kind in choices)
        if (self.selections and selection is None) or self.choices:
            return None
        return True

    def is_own(self, text: str | None) -> bool:
        """Whether ``text`` (an error as ``Type: message``) is one the patch itself raises."""
        import re

        return text is not None and any(re.search(form, text) for form in self.raises)

    @property
    def pattern(self) -> str:
        """One regular expression of every form, ``generic`` ones included (one that matches
        nothing where there is none)."""
        return self._joined(*self._identifying(), *self.generic)

    def matches(self, text: str | None) -> bool:
        """Whether ``text`` (an error, or how a process ended) is one of the forms."""
        import re

        return text is not None and re.search(self.pattern, text) is not None

    def identifies(self, text: str | None) -> bool:
        """Whether ``text`` is one of the forms that say by themselves that it is this crash (not a
        ``generic`` one)."""
        import re

        return text is not None and re.search(self._joined(*self._identifying()), text) is not None

    def _identifying(self) -> tuple[str, ...]:
        """The forms that say by themselves that an error is this crash: ``errors``, and the
        signals' deaths as :func:`killed_by` says them."""
        return (*self.errors, *(rf"{killed_by(signal)}\b" for signal in self.signals))

    @staticmethod
    def _joined(*forms: str) -> str:
        return "|".join(f"(?:{form})" for form in forms) or r"(?!)"


#: ``factory(original, context)`` returns the wrapper installed in place of ``original``
#: (the object in the class ``__dict__``: a function, or a classmethod for classmethods).
Factory = Callable[[Any, Any], Any]


class Fix(NamedTuple):
    """How a patch acts: its folder's ``fix.py`` defines it as ``FIX``; only what applies the patch
    loads it (:func:`fix_of`)."""

    #: ``"Class.attribute"`` (of :data:`~.target_names.MODULE`) or ``"module:Class.attribute"`` -> wrapper
    #: factory; what is wrapped is exactly these keys. A module a release lacks is never loaded, so a
    #: patch may name the module each release keeps its target in.
    targets: Mapping[str, Factory]
    #: ``decide(module)`` -> the context the factories take, for the targets in ``module`` (called
    #: once per module, when it loads); raises NotNeeded or Unsupported.
    decide: Callable[[ModuleType], Any]
    #: Called after install; raises Unsupported if the patched module misbehaves.
    verify: Callable[[ModuleType], None] | None = None
    #: ``lacks_crash(module)``: why stock ``module`` lacks the crash this patch fixes (one line), or
    #: None where it has it; raises Unsupported where it cannot tell. Asked of a patch that
    #: ``INDUCTOR_FIX_DISABLE`` turns off: where the crash is absent, it is ``not-needed`` (the process
    #: stays protected) rather than ``disabled``. None: ``decide`` tells (NotNeeded is the reason),
    #: which fits a patch whose ``decide`` raises NotNeeded exactly where its crash is absent.
    lacks_crash: Callable[[ModuleType], str | None] | None = None

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules its targets live in, in the order first named."""
        return tuple(dict.fromkeys(target_module(target) for target in self.targets))

    def targets_in(self, module: str) -> dict[str, Factory]:
        """Its targets in module ``module`` (a full module name), with their factories."""
        return {target: factory for target, factory in self.targets.items() if target_module(target) == module}


class Patch(NamedTuple):
    """One patch of the table: what it is. How it acts is its :class:`Fix` (:func:`fix_of`); its
    folder holds everything else about it. (A NamedTuple, not a dataclass: a tenth of the cost at
    ``import inductor_fix``.)"""

    name: str
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
    #: Releases whose internals the patch fits, as a ``packaging`` specifier ("": any);
    #: on an affected release outside it the bug stays (``decide`` says unsupported).
    supported: str = ""
    #: The Python package of its folder (its parts are found there); default
    #: ``inductor_fix.patches.<folder>``.
    package: str = ""
    #: What its stock crash looks like (:class:`Crash`): ``report`` says a process that died so died
    #: of the crash this patch fixes; ``check`` tells it from another error.
    crash: Crash = Crash()
    #: False for a patch that only saves cost (without it nothing crashes and no kernel is
    #: wrong): its state does not decide ``status().protected``, and a job report needs it on
    #: for nothing (``needed: no`` holds with it off).
    protects: bool = True
    #: Its :class:`Fix` where it is not its folder's ``fix.py`` (a patch a test builds in place).
    fix: Fix | None = None
    #: Why its entry could not be imported (:func:`unreadable_entry`); "" for every entry that could.
    unreadable: str = ""

    @property
    def folder(self) -> str:
        """The patch's folder name in ``inductor_fix/patches/`` and in ``test/`` (its name with
        ``_`` for ``-``); its targets' modules are :attr:`modules`."""
        return self.name.replace("-", "_")

    @property
    def diff(self) -> str:
        """The diff the version matrix applies (the first of :attr:`diffs`)."""
        return self.diffs[0]

    @property
    def targets(self) -> Mapping[str, Factory]:
        """Its fix's targets (:attr:`Fix.targets`); loads the fix, raises :class:`FixError` as
        :func:`fix_of` does. For tests and tools: the lifecycle holds the fix it loaded."""
        return fix_of(self).targets

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules its targets live in (:attr:`Fix.modules`); loads the fix as :attr:`targets` does."""
        return fix_of(self).modules

    def is_affected(self, torch_version: str) -> bool:
        """Whether stock ``torch_version`` (``"2.14.1+cu130"``, a dev build counts as its
        release) has the bug; for tests and tools, not for deciding to patch."""
        return in_releases(self.affected, torch_version)

    def fits(self, torch_version: str) -> bool:
        """Whether the patch fits ``torch_version``'s internals (:attr:`supported`)."""
        return in_releases(self.supported, torch_version)


def fix_of(patch: Patch) -> Fix:
    """``patch``'s :class:`Fix`: :attr:`Patch.fix`, else ``FIX`` of its folder's ``fix`` module,
    imported now. Raises :class:`FixError` naming the module and why if that module raises as it
    imports (anything but ``KeyboardInterrupt``: ``SystemExit`` too), defines no :class:`Fix`
    ``FIX``, or one whose fields are not of the types :class:`Fix` declares (:func:`check_fields`),
    or if the patch's entry itself was unreadable. ``KeyboardInterrupt`` is raised: a Ctrl-C ends
    the process, as Python ends it (a module that raises one itself as it imports reads the same:
    the two cannot be told apart)."""
    if patch.unreadable:
        raise FixError(patch.unreadable)
    fix, qualified = patch.fix, f"{patch.package or f'{__package__}.{patch.folder}'}.fix"
    if fix is None:
        try:
            module = importlib.import_module(qualified)
        except KeyboardInterrupt:  # Ctrl-C (see above)
            raise
        except BaseException as error:  # SystemExit too: a broken patch costs only itself
            raise FixError(f"{qualified} failed to load: {type(error).__name__}: {error}") from error
        fix = getattr(module, "FIX", None)
        if not isinstance(fix, Fix):
            raise FixError(f"{qualified} must define FIX, a Fix; it defines "
                           f"{', '.join(sorted(n for n in vars(module) if n.isupper())) or 'no upper-case name'}")
    try:
        check_fields(fix)
    except TypeError as error:
        raise FixError(f"{qualified if patch.fix is None else f'{patch.name} (Patch.fix)'}: {error}") from error
    return fix


def check_entry(entry: object) -> Patch:
    """``entry``, checked as the table loads it: a :class:`Patch` whose fields, and its
    :class:`Crash`'s, are of the types the classes declare (:func:`check_fields`), and whose
    crash's ``errors``, ``generic`` and ``raises`` are regular expressions. Raises TypeError (ValueError for a
    pattern) naming the first field that is not, so that ``report`` and ``status`` may rely on
    every entry of the table."""
    import re

    if not isinstance(entry, Patch):
        raise TypeError(f"PATCH is a {type(entry).__name__}, not a Patch")
    check_fields(entry)
    check_fields(entry.crash)
    for field in ("errors", "generic", "raises"):
        for index, form in enumerate(getattr(entry.crash, field)):
            try:
                re.compile(form)
            except re.error as error:
                raise ValueError(f"Crash.{field}[{index}] {form!r} is no regular expression: {error}") from None
    return entry


def check_fields(record: Any) -> None:
    """Raise TypeError naming the first field of ``record`` (a :class:`Patch`, :class:`Crash` or
    :class:`Fix`) whose value is not of the type its class declares: the annotations resolved by
    ``typing.get_type_hints``, read as ``isinstance`` of the class, ``X | None``, ``tuple[X, ...]``
    (a tuple of X: a str is not one), ``Mapping[K, V]`` and ``Callable`` (callable)."""
    import reprlib

    for name, hint in get_type_hints(type(record)).items():
        value = getattr(record, name)
        if not _is(value, hint):
            # The annotation as the source spells it (``tuple[str, ...]``; NamedTuple keeps a ForwardRef).
            declared = type(record).__annotations__[name]
            raise TypeError(f"{type(record).__name__}.{name} must be {getattr(declared, '__forward_arg__', declared)}, "
                            f"got {reprlib.repr(value)}")


def _is(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of type ``hint``, in the forms the records' annotations use."""
    origin, arguments = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if origin in (Union, UnionType):
        return any(_is(value, argument) for argument in arguments)
    if origin is tuple:  # tuple[X, ...]
        return isinstance(value, tuple) and all(_is(item, arguments[0]) for item in value)
    if origin is collections.abc.Mapping:
        return isinstance(value, collections.abc.Mapping) and all(
            _is(key, arguments[0]) and _is(item, arguments[1]) for key, item in value.items())
    if origin is collections.abc.Callable:
        return callable(value)
    return isinstance(value, hint)


def unreadable_entry(folder: str, error: BaseException) -> Patch:
    """The table's entry for the folder ``folder`` whose ``__init__`` (or its ``activity``) raised
    ``error`` as it imported: named as the folder names it, no activity kind; :func:`fix_of`
    raises :class:`FixError` with the reason, so the lifecycle says it ``unsupported``."""
    name = folder.replace("_", "-")
    reason = f"{__package__}.{folder} failed to load: {type(error).__name__}: {error}"
    return Patch(name=name, effect="", upstream="unknown: its entry cannot be read", affected="", delete_when="",
                 diffs=(), activity=Activity(name), unreadable=reason)


def in_releases(specifier: str, torch_version: str) -> bool:
    """Whether ``torch_version`` (a dev build counts as its release) is in ``specifier``."""
    from packaging.specifiers import SpecifierSet  # lazily: only tests and tools ask

    release = release_of(torch_version)
    return release is not None and release in SpecifierSet(specifier)
