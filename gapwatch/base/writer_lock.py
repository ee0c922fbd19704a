"""Whether a recording file is being written: its writer's lock, probed.

Who calls it: `gapwatch.sinks.output_file` (a target another `record` is writing is refused),
`gapwatch.sinks.segments` (a segment being written is never pruned) and
`gapwatch.sources.recording` (a reader that reaches the end of a file still being written says
so). The writer holds an exclusive `flock` on its file for as long as it writes; the probe takes
a shared one without waiting and lets it go at once, so it can tell, but for that instant a
writer starting on the same file would find it taken.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def locked_by_another(path: Path) -> bool:
    """True when some process holds the writer's lock on `path`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # releases our probe lock too
    return False
