"""The recording's file: checked before anything starts, then created and locked for one writer;
and every other file gapwatch writes whole (an export): a temporary beside it, renamed over it.

Who calls it: `gapwatch.engine.runtime.build_runtime` calls `check_output` first of all, before
the source, the exporter or any file is opened; `gapwatch.sinks.recorder.Recorder` opens the
`OutputFile` last, once everything else has started, and writes through it. `gapwatch export`
writes through `Replacement`.

The rules, so that an existing recording is never lost:
- an existing FILE is refused unless asked: `exists="replace"` (`--force`) replaces it,
  `exists="rotate"` (`--rotate`) keeps it and records to the next free name (`gw.jsonl.gz` ->
  `gw.1.jsonl.gz`, `gw.2.jsonl.gz`, ...);
- a recording being written is locked (`flock(LOCK_EX)` on the file itself, released when the
  writer closes it or dies): a second writer is refused, even with `--force`;
- the checks (directory exists, is writable, FILE is not a directory or a device) run before any
  file is created or truncated, so that a failed start leaves every file as it was;
- gapwatch never writes through a link it did not make: outputs are opened with `O_NOFOLLOW`
  (a new one with `O_EXCL` too), so a symbolic link planted where the recording goes is refused
  (it is "a file that exists"), and `--force` replaces the link itself, never its target (the
  link is removed and a new file created in its place); a temporary is a new file of a random
  name in the target's folder (`O_EXCL | O_NOFOLLOW`), renamed over the target at the end (a
  rename replaces a link, never what it points to). `record --out planted.jsonl --force` used to
  truncate the file the link pointed to, and `export` wrote through a planted `OUT.part`.
- a name taken since it was checked (a file or a link appeared there) is `NameTaken`: the
  recorder then goes on to the next free name, never touching what is there;
- `OutputFile.whereabouts` says whether the file is still at its name (someone may delete, move
  or replace it while it is written): the recorder checks it before each write, and goes on
  into a new file (`create_beside`: the same name, else the next free `--rotate` name, passing
  over whatever was put in its place).
The segments of a recording set (their names, what may be removed) are in
`gapwatch.sinks.segments`.
Every refusal is an `OutputRefused` whose message is for the user (the CLI exits 2).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gapwatch.base.temporaries import temporary_beside
from gapwatch.base.writer_lock import locked_by_another

#: What to do when FILE already exists: refuse (the default), replace it, or rotate to a new name.
ExistsPolicy = Literal["refuse", "replace", "rotate"]
#: Name endings kept together when a rotation number is inserted.
_SUFFIXES = (".jsonl.gz", ".jsonl", ".gz")
_MAX_ROTATIONS = 9999


class OutputRefused(Exception):
    """The recording cannot be written where asked. The message is for the user (exit 2)."""


class NameTaken(OutputRefused):
    """A file (or a link) appeared at the name since it was checked: not ours to touch."""


@dataclass(frozen=True)
class OutputPlan:
    """Where the recording will go, once checked: `path` (rotation applied), and whether an
    existing file there is to be replaced."""

    path: Path
    replace: bool
    #: `path` is a symbolic link (replacing it removes the link, never touches its target).
    link: bool = False
    #: `--rotate`: the newest recording of the chain this one follows (its set continues).
    continues: Path | None = None


def split_suffix(name: str) -> tuple[str, str]:
    """`gw.jsonl.gz` -> (`gw`, `.jsonl.gz`): the recording suffixes kept together."""
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix
    return name, ""


def rotated_name(path: Path, n: int) -> Path:
    """`gw.jsonl.gz` -> `gw.<n>.jsonl.gz` (the number goes before the recording suffixes)."""
    stem, suffix = split_suffix(path.name)
    return path.with_name(f"{stem}.{n}{suffix}")


def check_target(path: Path, example: str = "gapwatch.jsonl.gz",
                  needs: str = "a recording needs a file it can lock, truncate and append to"
                  ) -> bool:
    """Raise OutputRefused if `path` cannot take a new file (`example`: a name to suggest inside
    a directory given as `path`; `needs`: why a device will not do); True when it exists."""
    parent = path.parent
    if not parent.exists():
        raise OutputRefused(f"{path}: the directory {parent} does not exist (create it first)")
    if not parent.is_dir():
        raise OutputRefused(f"{path}: {parent} is not a directory")
    try:
        st = os.lstat(path)  # a link is a file that exists, whatever it points to
    except FileNotFoundError:
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputRefused(
                f"{path}: cannot create a file in {parent} (not writable, or a read-only file "
                "system)") from None
        return False
    except OSError as exc:
        raise OutputRefused(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        return True
    if stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"{path} is a directory; give a file name inside it "
                            f"(e.g. {path / example})")
    if not stat.S_ISREG(st.st_mode):
        raise OutputRefused(f"{path} is not a regular file (a device or a pipe); {needs}")
    return True


def check_replaceable(path: str | Path, example: str) -> None:
    """Check, creating nothing, that `path` can be written whole and put in place by
    `Replacement` (`export --out`): its directory exists and takes a new file, and it is not a
    directory or a device (an existing file or link is replaced). Raises OutputRefused;
    `example` is the file name suggested inside a directory given as `path`."""
    check_target(Path(path), example, "an export is written whole beside it, then renamed "
                                       "over it; give a file name (or - for standard output)")


def check_output(path: str | Path, exists: ExistsPolicy = "refuse") -> OutputPlan:
    """Check that a recording can be written to `path`, without creating or changing anything.

    Raises:
        OutputRefused: the directory is missing or not writable, `path` is a directory or a
            device, it exists and `exists` is "refuse", or another process is writing it.
    """
    target = Path(path)
    if not check_target(target):
        return OutputPlan(target, replace=False)
    if target.is_symlink():
        if exists == "replace":
            return OutputPlan(target, replace=True, link=True)
        if exists == "refuse":
            raise OutputRefused(
                f"{target} is a symbolic link (to {os.readlink(target)}); gapwatch does not "
                "write through a link: give --force to replace the link itself with the "
                f"recording, or --rotate to record to {rotated_name(target, 1)}")
    elif locked_by_another(target):
        raise OutputRefused(f"{target} is being written by another process (it holds the "
                            "recording's lock); stop that one first, or record elsewhere")
    if exists == "replace":
        if not os.access(target, os.W_OK, follow_symlinks=False):
            raise OutputRefused(f"{target}: not writable")
        return OutputPlan(target, replace=True)
    if exists == "rotate":
        for n in range(1, _MAX_ROTATIONS + 1):
            candidate = rotated_name(target, n)
            if not check_target(candidate):
                previous = rotated_name(target, n - 1) if n > 1 else target
                return OutputPlan(candidate, replace=False, continues=previous)
        raise OutputRefused(f"{target}: {_MAX_ROTATIONS} rotated recordings exist already")
    size = target.stat().st_size
    raise OutputRefused(
        f"{target} exists ({size} bytes); gapwatch does not overwrite a recording: give "
        f"--force to replace it, or --rotate to keep it and record to {rotated_name(target, 1)}"
        " (the next free name)")


def create_beside(path: Path) -> OutputFile:
    """A new file for a recording whose file went away (deleted, moved, replaced): `path`
    itself when the name is free, else the next free `--rotate` name (`gw.1.jsonl`, ...).
    Whatever holds a name (a file, a link, a FIFO put where the recording was) is passed over,
    never opened or touched: a FIFO in its place used to stop the recording from going on
    anywhere. Raises OutputRefused when no file can be created."""
    for n in range(_MAX_ROTATIONS + 1):
        candidate = rotated_name(path, n) if n else path
        if os.path.lexists(candidate):
            continue
        try:
            return OutputFile(OutputPlan(candidate, False))
        except NameTaken:
            continue  # appeared since it was looked at: not ours
    raise OutputRefused(f"{path}: {_MAX_ROTATIONS} rotated recordings exist already")


@dataclass(frozen=True)
class Whereabouts:
    """Where a recording's file is: still at its name (`here`); if not, whether its data still
    exist under another name (moved, not deleted: `data_kept`), and whether another file now
    has its name (`name_taken`)."""

    here: bool
    data_kept: bool
    name_taken: bool


class OutputFile:
    """The recording's file, created (or truncated, when replacing) and locked for this writer.

    Writes go through `write_at` (positioned, so a failed write is undone with `truncate_to`).
    The lock lasts until `close()` (or the process's end, however it ends).
    """

    def __init__(self, plan: OutputPlan) -> None:
        self.path = plan.path
        # O_NOFOLLOW: a link put here since the check (or any link) is never written through.
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        if plan.link:
            try:
                os.unlink(self.path)  # the link itself: its target is not ours to touch
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise OutputRefused(f"{self.path}: cannot replace the link: "
                                    f"{exc.strerror or exc}") from None
        if not plan.replace or plan.link:
            flags |= os.O_EXCL  # a file that appeared since the check is not ours to touch
        try:
            fd = os.open(self.path, flags, 0o644)
        except FileExistsError:
            raise NameTaken(f"{self.path} appeared while gapwatch was starting; not "
                                "overwritten (give --force to replace it)") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NameTaken(f"{self.path} became a symbolic link while gapwatch was "
                                    "starting; not written through") from None
            raise OutputRefused(f"{self.path}: cannot create: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise OutputRefused(f"{self.path} is being written by another process (it holds "
                                "the recording's lock)") from None
        if plan.replace:
            try:
                os.ftruncate(fd, 0)
            except OSError as exc:
                os.close(fd)
                raise OutputRefused(f"{self.path}: cannot replace: {exc.strerror or exc}") from None
        self._fd: int | None = fd
        st = os.fstat(fd)
        self._inode = (st.st_dev, st.st_ino)

    @property
    def inode(self) -> tuple[int, int]:
        """(device, inode) of the file as created."""
        return self._inode

    def write_at(self, offset: int, data: bytes) -> None:
        """Write all of `data` at `offset`. Raises OSError (ENOSPC, EIO, ...) part-way through:
        the caller truncates back to where it started."""
        fd = self._require()
        view = memoryview(data)
        while view:
            n = os.pwrite(fd, view, offset)
            view = view[n:]
            offset += n

    def truncate_to(self, size: int) -> bool:
        """Cut the file back to `size` bytes (undo a failed write); False if even that failed."""
        try:
            os.ftruncate(self._require(), size)
        except OSError:
            return False
        return True

    def whereabouts(self) -> Whereabouts:
        """Whether `path` still names this writer's file (someone may have deleted, moved or
        replaced it: writes would then go on into a file no one will find)."""
        try:
            ours = os.fstat(self._require())
        except OSError:
            return Whereabouts(here=True, data_kept=True, name_taken=True)  # cannot tell
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return Whereabouts(here=False, data_kept=ours.st_nlink > 0, name_taken=False)
        except OSError:
            return Whereabouts(here=True, data_kept=True, name_taken=True)  # cannot tell
        if (st.st_dev, st.st_ino) == self._inode:
            return Whereabouts(here=True, data_kept=True, name_taken=True)
        return Whereabouts(here=False, data_kept=ours.st_nlink > 0, name_taken=True)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove_empty(self) -> bool:
        """After `close()`: remove the file if it is still the empty file this writer made
        (same inode, 0 bytes); True when it was removed."""
        try:
            st = os.lstat(self.path)
            if (st.st_dev, st.st_ino) != self._inode or st.st_size:
                return False
            os.unlink(self.path)
        except OSError:
            return False
        return True

    def _require(self) -> int:
        if self._fd is None:
            raise OSError(f"{self.path}: already closed")
        return self._fd



class Replacement:
    """A file written whole, then put in place: a new temporary of a random name beside `dest`
    (`O_CREAT | O_EXCL | O_NOFOLLOW`: nothing planted can be written through), renamed over
    `dest` by `commit()` (a link at `dest` is replaced, its target never touched), removed by
    `discard()`. `file` is binary. Raises OSError when the folder takes no new file."""

    def __init__(self, dest: Path) -> None:
        self.dest = dest
        # mkstemp opens with O_EXCL | O_NOFOLLOW, mode 0600; a finished export reads as any
        # file the user writes does.
        fd, self.path = temporary_beside(dest)
        os.fchmod(fd, 0o644)
        self.file = os.fdopen(fd, "wb")

    def commit(self) -> None:
        self.file.close()
        os.replace(self.path, self.dest)

    def discard(self) -> None:
        """Remove the temporary, whatever its close says: the flush of its last buffered
        bytes fails on a full disk (the file is closed all the same), and the unlink must
        still come (it was skipped, leaving the `.part` behind)."""
        try:
            self.file.close()
        except OSError:
            pass  # its bytes are not wanted
        finally:
            self.path.unlink(missing_ok=True)
