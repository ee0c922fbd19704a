"""The temporaries gapwatch writes a file whole through: `.NAME.XXXXXXXX.part` beside NAME, made
by `temporary_beside`, told by `is_temporary`: the name's one home.

Who calls it: `gapwatch.sinks.output_file.Replacement` makes them (an export's output);
`gapwatch.sources.recording_set` leaves them out of a folder's entries, unsaid: one is an
export being written (or one a killed export left), never a recording. `export DIR --out
DIR/x.csv` named its own temporary, already gone when said, as an entry not read.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

#: mkstemp's names: the prefix, eight random characters of this alphabet, the suffix.
_TEMPORARY = re.compile(r"\..+\.[a-z0-9_]{8}\.part")


def temporary_beside(dest: Path) -> tuple[int, Path]:
    """A new temporary beside `dest` (an open descriptor and its path): mkstemp opens with
    `O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600, so nothing planted can be written through."""
    fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    return fd, Path(name)


def is_temporary(name: str) -> bool:
    """Whether `name` (an entry's name, no folder) is one of `temporary_beside`'s."""
    return _TEMPORARY.fullmatch(name) is not None
