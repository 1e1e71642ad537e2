"""The files a user names for the package to write: whether one can be written, said the same
way by every command, and how it is created.

Two commands write such a file: ``run --report FILE`` (and ``INDUCTOR_FIX_REPORT``), whose
processes append lines to it, and ``check --json FILE``, which writes it whole at the end (a
new file beside it, renamed over it). Both check it before any work starts, with
:func:`unwritable`: the same file failing the same way reads the same in both. A file either
creates takes :data:`NEW_FILE_MODE` less the umask, as ``open(FILE, "w")`` and a shell's ``>``
give it; a file ``check`` replaces keeps its permission bits.
"""

from __future__ import annotations

import os

__all__ = ["NEW_FILE_MODE", "unwritable", "write_whole"]

#: The mode a new file is opened with; the kernel takes the umask off it.
NEW_FILE_MODE = 0o666
#: How a file is opened to append: O_NONBLOCK, so that a FIFO with no reader fails at once instead of hanging.
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK


def unwritable(path: str, *, create: bool) -> str | None:
    """Why ``path`` cannot be written, or None if it can. It must be a regular file or missing,
    in a folder that exists; an existing file must take a write (an empty one: a file of
    ``/proc`` or ``/sys`` opens for writing, then fails every write). ``create``: a missing file
    is created empty now, as lines will be appended to it (``run --report``); else nothing is
    left behind, and as the file will be replaced whole, its folder must take a new file
    (``check --json``: a trial file, removed). Changes nothing else."""
    import stat

    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:  # a folder on the way that cannot be searched
        return f"cannot write to it: {error.strerror or error}"
    if mode is not None and stat.S_ISDIR(mode):
        return "it is a directory, not a file"
    if mode is not None and not stat.S_ISREG(mode):
        return "it is not a regular file (a device, a FIFO, a socket)"
    if not os.path.isdir(folder):
        return f"no such directory: {folder}"
    if mode is not None:
        try:
            _take_a_write(os.open(path, _APPEND))
        except OSError as error:
            return f"cannot write to it: {error.strerror or error}"
    elif create:
        try:
            _take_a_write(os.open(path, _APPEND | os.O_CREAT, NEW_FILE_MODE))
        except OSError as error:
            return f"cannot create a file in {folder}: {error.strerror or error}"
    if not create:
        try:
            descriptor, trial = _new_file(folder)
        except OSError as error:
            return f"cannot create a file in {folder}: {error.strerror or error}"
        os.close(descriptor)
        os.unlink(trial)
    return None


def write_whole(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: a new file beside it, then renamed over it.
    A new ``path`` takes :data:`NEW_FILE_MODE` less the umask; an existing one keeps its
    permission bits. Raises OSError, leaving ``path`` as it was and nothing beside it."""
    import stat

    try:
        kept = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        kept = None
    descriptor, temporary = _new_file(os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            if kept is not None:
                os.fchmod(handle.fileno(), kept)
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _new_file(folder: str) -> tuple[int, str]:
    """A new file in ``folder`` under a name no other has, opened for writing with
    :data:`NEW_FILE_MODE` (tempfile.mkstemp's would be 0600 whatever the umask)."""
    while True:
        name = os.path.join(folder, f".inductor_fix_{os.getpid()}_{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, NEW_FILE_MODE), name
        except FileExistsError:
            continue


def _take_a_write(descriptor: int) -> None:
    """An empty write to ``descriptor``, then closed: OSError where a real write would fail."""
    try:
        os.write(descriptor, b"")
    finally:
        os.close(descriptor)
