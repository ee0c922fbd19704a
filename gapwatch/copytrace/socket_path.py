"""Where the copy trace's socket goes by default: a folder only its owner can write to.

Who calls it: the copy-trace reader (`gapwatch.sources.copytrace`: the default path, the folder
made and checked before it listens, the owner of a socket it finds), `gapwatch copytrace build`
(the path it prints for the prover's unit). `gapwatch_copytrace.c` applies the same rule with
the prover's uid and environment (its `default_socket_path` and `folder_problem`), and checks the
folder again before every send; `tests/test_copytrace_build.py` compares the two.

The rule, first that holds:
1. `$XDG_RUNTIME_DIR/gapwatch-copytrace.sock`, when that is an absolute path to a private folder;
2. `/run/user/UID/gapwatch-copytrace.sock`, when that is a private folder (a login session's);
3. `$TMPDIR/gapwatch-UID/copytrace.sock` (`/tmp` without `$TMPDIR`): gapwatch makes the folder,
   mode 0700.
"Private" means: a folder, not a symbolic link, owned by UID, that neither its group nor others
may write to. Why: without a login session (root under systemd) the default was
`/tmp/gapwatch-copytrace-UID.sock`, in a folder anyone can write to: another local user who
bound it first made root's `record --copytrace` exit 2 and received the prover's copies. In a
private folder nobody else can bind; a folder that another user made first is refused, naming
that user, and the library does not send there.
"""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Mapping

#: The socket's name in a runtime folder, and in gapwatch's own folder under $TMPDIR.
RUNTIME_NAME = "gapwatch-copytrace.sock"
TMP_NAME = "copytrace.sock"
#: The longest path a Unix socket address holds (sun_path is 108 bytes with its NUL): a folder
#: whose socket path would be longer is no candidate (the C code has the same rule).
MAX_PATH_BYTES = 107


def user_name(uid: int) -> str:
    """`mallory (uid 1001)`: who a uid is, for a refusal."""
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def folder_problem(folder: str, uid: int) -> str | None:
    """Why `folder` is not private to `uid` (in words, naming who holds it), or None when it is:
    a folder, not a link, owned by `uid`, not writable by its group or others."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != uid:
        return f"belongs to user {user_name(st.st_uid)}"
    if st.st_mode & 0o022:
        return f"can be written by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def tmp_folder(uid: int, env: Mapping[str, str]) -> str:
    """gapwatch's own folder for the socket when there is no runtime folder."""
    base = env.get("TMPDIR", "")
    if not base.startswith("/") or len(base.encode()) + len("/gapwatch-4294967295/") \
            + len(TMP_NAME) > MAX_PATH_BYTES:
        base = "/tmp"
    return os.path.join(base, f"gapwatch-{uid}")


def default_socket_path(uid: int | None = None, *, env: Mapping[str, str] | None = None,
                        run_user: str = "/run/user") -> str:
    """The default socket path for `uid` (see the module docstring). Makes nothing."""
    uid = os.getuid() if uid is None else uid
    env = os.environ if env is None else env
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/") and len(xdg.encode()) + 1 + len(RUNTIME_NAME) <= MAX_PATH_BYTES \
            and folder_problem(xdg, uid) is None:
        return os.path.join(xdg, RUNTIME_NAME)
    folder = os.path.join(run_user, str(uid))
    if folder_problem(folder, uid) is None:
        return os.path.join(folder, RUNTIME_NAME)
    return os.path.join(tmp_folder(uid, env), TMP_NAME)


def make_private_folder(folder: str, uid: int | None = None) -> str | None:
    """Create `folder` (mode 0700) if it does not exist, then check it; why it cannot be used
    (naming who holds it), or None."""
    uid = os.getuid() if uid is None else uid
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return f"cannot be made ({exc.strerror or exc})"
    return folder_problem(folder, uid)
