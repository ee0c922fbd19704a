"""Build the copy-trace library on this machine and check it: `gapwatch copytrace build`.

Who calls it: `gapwatch.commands.copytrace` (the user), the tests (CI compiles it from the PyPI
wheels' headers), `bench/copytrace_h200.py` (against the CUDA toolkit). Pure Python around the
system C compiler: no CUDA, no GPU and no libcupti are needed to build, only the headers.

Headers (`cupti.h`, and `cuda.h` with `crt/host_defines.h`, which it includes) are looked for, in
order: `--cuda-include DIR`, `$CUDA_HOME/include` then `$CUDA_PATH/include` (and their
`extras/CUPTI/include`),
`/usr/local/cuda/include` (idem), then the installed `nvidia-cuda-cupti`, `nvidia-cuda-runtime`
and `nvidia-cuda-crt` wheels (`nvidia/cu13/include` in site-packages). The libcupti found beside
them (toolkit `extras/CUPTI/lib64`, `lib64`, or the wheel's `nvidia/cu13/lib`) is compiled in as the
default to load at run time, so the prover needs no LD_LIBRARY_PATH.

After compiling, the library is loaded here (its constructor does nothing; only the CUDA driver
calls `InitializeInjection`) and asked for the layout it was compiled with; the build fails if the
CUPTI record offsets or the wire format differ from what this gapwatch reads
(`gapwatch.copytrace.wire.LAYOUT`). It is compiled and checked in a private temporary folder
(mode 0700, never in the output folder), then written to a temporary name in the output folder
through its descriptor and renamed, so a prover that has the old library mapped is not
disturbed. The output folder, and each folder above it, must be one only this user or root can
change (`_open_to_others`): the prover loads the library (as root, often), so a folder another
user may write to would let that user put their code in its place; and the compiler and the
check once wrote and loaded the library by its name in that folder, where a link or another
file could be put between the two.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gapwatch.base.quit_early import stop_signals_deferred
from gapwatch.copytrace import wire
from gapwatch.copytrace.socket_path import user_name

LIBRARY_NAME = "libgapwatch_copytrace.so"
SOURCE_NAME = "gapwatch_copytrace.c"
#: The CUDA major the source reads layouts of (CUpti_ActivityMemcpy6).
CUDA_MAJOR = 13
CFLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-fvisibility=hidden")
LIBS = ("-ldl", "-lpthread")


class BuildError(Exception):
    """The library cannot be built or fails its check; the message says what to do."""


@dataclass(frozen=True)
class BuildResult:
    library: Path
    include_dirs: list[str]
    cupti_library: str | None
    compiler: str
    layout: dict[str, int] = field(default_factory=dict)


def source_path() -> Path:
    """The C source shipped inside the package."""
    return Path(str(resources.files("gapwatch.copytrace").joinpath(SOURCE_NAME)))


def default_out_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gapwatch"


def _toolkit_roots() -> list[Path]:
    roots = []
    for env in ("CUDA_HOME", "CUDA_PATH"):
        v = os.environ.get(env)
        if v:
            roots.append(Path(v))
    roots.append(Path("/usr/local/cuda"))
    return roots


def _wheel_roots() -> list[Path]:
    """`nvidia/cu13` folders of installed NVIDIA wheels, in sys.path order: only in the folders
    packages are installed to (site-packages, dist-packages), never the current folder or a
    script's (sys.path's "" or first entry): headers planted in `./nvidia/cu13/include` used to
    be compiled into the library that goes into the prover."""
    out: list[Path] = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or \
                Path(entry).name not in ("site-packages", "dist-packages"):
            continue
        p = Path(entry) / "nvidia" / f"cu{CUDA_MAJOR}"
        if p.is_dir() and p not in out:
            out.append(p)
    return out


def candidate_include_dirs(cuda_include: str | None = None) -> list[Path]:
    """Every folder where the headers may be, in search order (existing or not)."""
    dirs: list[Path] = []
    if cuda_include:
        dirs.append(Path(cuda_include))
    for root in _toolkit_roots():
        dirs += [root / "include", root / "extras" / "CUPTI" / "include",
                 root / "targets" / "x86_64-linux" / "include"]
    dirs += [root / "include" for root in _wheel_roots()]
    return dirs


def find_include_dirs(cuda_include: str | None = None) -> list[str]:
    """The folders holding `cupti.h`, `cuda.h` and `crt/host_defines.h` (first found of each).

    Raises:
        BuildError: one of them is nowhere to be found.
    """
    wanted = ("cupti.h", "cuda.h", "crt/host_defines.h")
    found: dict[str, Path | None] = dict.fromkeys(wanted)
    candidates = [d for d in candidate_include_dirs(cuda_include) if d.is_dir()]
    if cuda_include and not Path(cuda_include).is_dir():
        raise BuildError(f"--cuda-include {cuda_include}: not a folder")
    for name in wanted:
        for d in candidates:
            if (d / name).is_file():
                found[name] = d
                break
    missing = [n for n, d in found.items() if d is None]
    if missing:
        raise BuildError(
            f"cannot find {', '.join(missing)} (looked in "
            f"{', '.join(str(d) for d in candidate_include_dirs(cuda_include))}). Install the "
            f"CUDA {CUDA_MAJOR} toolkit, give --cuda-include DIR, or `pip install "
            f"'nvidia-cuda-cupti>={CUDA_MAJOR}.0,<{CUDA_MAJOR}.1' "
            f"'nvidia-cuda-runtime>={CUDA_MAJOR}.0,<{CUDA_MAJOR}.1' "
            f"'nvidia-cuda-crt>={CUDA_MAJOR}.0,<{CUDA_MAJOR}.1'` into this environment")
    out: list[str] = []
    for folder in found.values():
        if folder is not None and str(folder) not in out:
            out.append(str(folder))
    return out


def find_cupti_library(include_dirs: list[str]) -> str | None:
    """The libcupti that goes with the headers, to be loaded by default at run time."""
    name = f"libcupti.so.{CUDA_MAJOR}"
    for inc in include_dirs:
        p = Path(inc)
        roots = [p.parent, p.parent.parent, p.parent.parent.parent]
        for root in roots:
            for sub in ("extras/CUPTI/lib64", "lib64", "lib", "targets/x86_64-linux/lib"):
                cand = root / sub / name
                if cand.is_file():
                    return str(cand.resolve())
    return None


def find_compiler(cc: str | None = None) -> str | None:
    """The C compiler to build with: `cc` (`--cc`) or `$CC` when given, else the first of cc,
    gcc, clang on PATH (None: none). A compiler asked for by name is used or refused, never
    swapped for another: `--cc nosuchcc` used to build with `cc` and exit 0.

    Raises:
        BuildError: `cc` or `$CC` names a compiler that is not on PATH (or not executable).
    """
    for given, what in ((cc, "--cc"), (os.environ.get("CC"), "$CC")):
        if given:
            if shutil.which(given) is None:
                raise BuildError(f"{what} {given}: not found on PATH or not executable; give "
                                 "a compiler that runs (e.g. --cc gcc), or leave it out to use "
                                 "the first of cc, gcc, clang")
            return given
    for cand in ("cc", "gcc", "clang"):
        if shutil.which(cand):
            return cand
    return None


def read_layout(library: Path) -> dict[str, int]:
    """Load the built library here and ask it for the layout it was compiled with."""
    try:
        lib = ctypes.CDLL(str(library))
    except OSError as exc:
        raise BuildError(f"{library}: built, but cannot be loaded ({exc})") from None
    if not hasattr(lib, "InitializeInjection"):
        raise BuildError(f"{library}: no InitializeInjection symbol: the driver would not call it")
    fn = lib.gapwatch_copytrace_layout
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    buf = ctypes.create_string_buffer(4096)
    fn(buf, len(buf))
    return wire.parse_layout(buf.value.decode())


def _open_to_others(folder: Path) -> str | None:
    """Why a library in `folder` could be changed by another user (in words, naming the folder
    and who), or None: each folder of its path as written and of the path its links lead to
    belongs to this user or root, and none lets its group or others write, but a sticky one
    (/tmp: others may add names there, never replace this user's files). A folder that does
    not exist yet is judged by the one above it, where it will be made (and judged again once
    made: `_made_ours`). Both paths: a link in a folder of ours to a folder under another
    user's was judged by the link's folders alone."""
    me = os.geteuid()
    written = Path(os.path.abspath(folder))
    real = Path(os.path.realpath(folder))
    for f in dict.fromkeys((written, *written.parents, real, *real.parents)):
        try:
            st = os.stat(f)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{f} cannot be read ({exc.strerror or exc})"
        if st.st_uid not in (me, 0):
            return f"{f} belongs to user {user_name(st.st_uid)}"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return f"{f} can be written by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _made_ours(out: Path) -> None:
    """Make `out` if missing, then judge it again (`_open_to_others`): a folder another user
    made at its name first (under a sticky folder, where anyone may add one) passed the look
    before it existed, and `mkdir(exist_ok=True)` took it.

    Raises:
        BuildError: it cannot be made, or it is not ours to install into.
        OSError: `mkdir`'s, for the caller to say.
    """
    out.mkdir(parents=True, exist_ok=True)
    _refuse_open(out)


def _refuse_open(out: Path) -> None:
    """Raise `BuildError` in one line when another user could change `out`
    (`_open_to_others`)."""
    open_to = _open_to_others(out)
    if open_to is not None:
        raise BuildError(f"not installing into {out}: {open_to}, and the prover loads this "
                         "library: give --out a folder only you (or root) can change")


def _new_file_in(out: Path) -> tuple[int, str]:
    """A new file of a random name in `out` (made with O_EXCL: nothing planted is opened),
    its descriptor and name; the caller removes it, taking them under
    `stop_signals_deferred` (a signal between the two left it). Raises OSError."""
    return tempfile.mkstemp(prefix=".gapwatch_copytrace-", suffix=".so", dir=out)


def _compile_folder(out: Path) -> str:
    """Where the private folder to compile in is made: the temporary folder, unless another
    user could change it (`sudo -E` with a user's own `$TMPDIR`: that user could swap the
    library the check then loads as root), then `out`, already judged."""
    tmp = tempfile.gettempdir()
    return tmp if _open_to_others(Path(tmp)) is None else str(out)


def _can_take_a_file(out: Path) -> None:
    """Make `out` if missing and try a file in it, before anything is compiled.

    Raises:
        BuildError: it cannot take one (read-only, a file, /proc, no room): one line, no
            traceback, and no compile for nothing.
    """
    try:
        _made_ours(out)
        with stop_signals_deferred():  # made and removed before a signal is taken
            fd, name = _new_file_in(out)
            os.close(fd)
            os.unlink(name)
    except OSError as exc:
        raise BuildError(f"cannot write the library into {out}: {exc.strerror or exc}"
                         ) from None


def _install(built: Path, out: Path, target: Path) -> None:
    """Copy the checked library `built` to `target` in `out` (made if missing): its bytes
    through the descriptor of a new file of a random name, then renamed into place.

    Raises:
        BuildError: `out` cannot take it (read-only, a file, /proc, no room, a folder in the
            library's place): one line, no traceback.
    """
    tmp: str | None = None
    try:
        _made_ours(out)
        with stop_signals_deferred():  # made and in `tmp` at once: the finally removes it
            fd, tmp = _new_file_in(out)
        with os.fdopen(fd, "wb") as f:
            f.write(built.read_bytes())
            os.fchmod(f.fileno(), 0o755)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise BuildError(f"cannot install {target}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def build(
    out_dir: str | Path | None = None,
    *,
    cuda_include: str | None = None,
    cc: str | None = None,
    extra_cflags: tuple[str, ...] = (),
) -> BuildResult:
    """Compile, check and install the library into `out_dir`; return where it went.

    Raises:
        BuildError: no compiler, no headers, a compile error, or a layout this gapwatch cannot read.
    """
    compiler = find_compiler(cc)
    if compiler is None:
        raise BuildError("no C compiler found (tried $CC, cc, gcc, clang): install gcc "
                         "(apt-get install gcc) or give --cc")
    include_dirs = find_include_dirs(cuda_include)
    cupti = find_cupti_library(include_dirs)
    # Absolute: the path printed for the prover's unit (`CUDA_INJECTION64_PATH=...`) is read
    # from systemd's working folder, `/`, where `rel/lib/...` is found nowhere.
    out = Path(os.path.abspath(out_dir if out_dir is not None else default_out_dir()))
    target = out / LIBRARY_NAME
    _refuse_open(out)
    _can_take_a_file(out)
    compile_in = _compile_folder(out)
    try:
        private_dir = tempfile.TemporaryDirectory(prefix=".gapwatch-copytrace-", dir=compile_in)
    except OSError as exc:
        raise BuildError(f"cannot make a private folder to compile in ({compile_in}): "
                         f"{exc.strerror or exc}") from None
    with private_dir as private:
        tmp = Path(private) / LIBRARY_NAME
        cmd = [compiler, *CFLAGS, *extra_cflags, *(f"-I{d}" for d in include_dirs)]
        if cupti:
            cmd.append(f'-DGWCT_CUPTI_DEFAULT="{cupti}"')
        cmd += ["-o", str(tmp), str(source_path()), *LIBS]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise BuildError(f"compile failed ({' '.join(cmd)}):\n{(r.stderr or r.stdout)[-3000:]}")
        layout = read_layout(tmp)
        bad = wire.layout_mismatches(layout)
        if bad:
            raise BuildError("the compiled library's layout is not what this gapwatch reads "
                             f"(headers of another CUDA major?): {'; '.join(bad)}")
        _install(tmp, out, target)
    return BuildResult(library=target, include_dirs=include_dirs, cupti_library=cupti,
                       compiler=compiler, layout=layout)


def install_instructions(library: Path, socket_path: str, unit: str = "cuzk") -> str:
    """What to add to the prover's environment, and how to turn it off again."""
    return f"""\
To trace the prover's copies, start it with these two variables set.
For cuzk under systemd, a drop-in (`sudo systemctl edit {unit}`):

  [Service]
  Environment=CUDA_INJECTION64_PATH={library}
  Environment=GAPWATCH_COPYTRACE_SOCKET={socket_path}

then `sudo systemctl restart {unit}`. Any other process:

  CUDA_INJECTION64_PATH={library} GAPWATCH_COPYTRACE_SOCKET={socket_path} your-prover ...

and run gapwatch beside it with the same socket:

  gapwatch watch --copytrace {socket_path} ...     (or: gapwatch record --copytrace ...)

The prover's log then has one line `gapwatch-copytrace[PID]: tracing host<->device copies ...`.
To turn it off: `sudo systemctl revert {unit}` (or delete the two lines) and restart it; or,
without touching the unit's lines, add `Environment=GAPWATCH_COPYTRACE_OFF=1` and restart.
The prover runs the same with or without gapwatch listening (copies are then dropped, counted).
"""
