"""The copy-trace library is built from the PyPI wheels' CUDA 13.0 headers (no toolkit, no GPU),
exports what the CUDA driver calls, reads CUPTI records at the offsets CUDA 13 defines, and
speaks the wire format the reader parses, without ever waiting on a slow reader.

Skipped (loudly) only where there is no C compiler; the headers come from the `test` extra
(nvidia-cuda-cupti, nvidia-cuda-runtime, nvidia-cuda-crt of the 13.0 line).
"""

from __future__ import annotations

import ctypes
import pickle
import shutil
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from shared_files import made_once

from gapwatch.copytrace import build as ctbuild
from gapwatch.copytrace import wire
from gapwatch.copytrace.socket_path import default_socket_path
from gapwatch.core.models import CopyRecord, GpuInfo, Record
from gapwatch.sources.copytrace import CopyTraceReader

if ctbuild.find_compiler() is None:
    warnings.warn("no C compiler (cc/gcc/clang): the copy-trace library is NOT compiled in "
                  "this run", stacklevel=1)
    pytest.skip("no C compiler: install gcc to build the copy-trace library",
                allow_module_level=True)

UUID0_TEXT = "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf"  # what the self-test sends for device 0


def wheel_include() -> str:
    for root in ctbuild._wheel_roots():
        if (root / "include" / "cupti.h").is_file():
            return str(root / "include")
    pytest.fail("the nvidia-cuda-cupti / -runtime / -crt wheels (13.0) are not installed: "
                "pip install '.[test]'")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> ctbuild.BuildResult:
    """The library, compiled once per run (~0.26 CPU-s of the compiler) and shared by the
    workers that draw this module's tests, each of which compiled it again: read only (a
    test loads a private copy of it, `fresh_copy`)."""
    def make(folder: Path) -> None:
        result = ctbuild.build(folder, cuda_include=wheel_include(), extra_cflags=("-Werror",))
        (folder / "built.pickle").write_bytes(pickle.dumps(result))

    folder = made_once(tmp_path_factory, "copytrace-built", make)
    result = pickle.loads((folder / "built.pickle").read_bytes())
    assert isinstance(result, ctbuild.BuildResult)
    return result


def fresh_copy(built: ctbuild.BuildResult, tmp_path: Path) -> ctypes.CDLL:
    """A private copy of the library: each load has its own state (counters, socket)."""
    private = tmp_path / "libcopy.so"
    shutil.copy(built.library, private)
    lib = ctypes.CDLL(str(private))
    lib.gapwatch_copytrace_selftest.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
    lib.gapwatch_copytrace_selftest.restype = ctypes.c_int
    return lib


def test_it_compiles_from_the_wheels_headers_and_exports_initializeinjection(
        built: ctbuild.BuildResult) -> None:
    assert built.library.is_file()
    if shutil.which("nm"):
        symbols = subprocess.run(["nm", "-D", "--defined-only", str(built.library)],
                                 capture_output=True, text=True, check=True).stdout
        exported = {line.split()[-1] for line in symbols.splitlines() if " T " in line}
        assert {"InitializeInjection", "gapwatch_copytrace_layout"} <= exported
        # Nothing else leaks into the prover's symbol space.
        assert exported <= {"InitializeInjection", "gapwatch_copytrace_layout",
                            "gapwatch_copytrace_selftest", "gapwatch_copytrace_selftest_default",
                            "gapwatch_copytrace_default_socket"}


def test_it_reads_cupti_records_at_the_cuda_13_offsets_and_writes_wire_version_1(
        built: ctbuild.BuildResult) -> None:
    lay = built.layout
    assert lay["cupti_api"] // 10000 == 13
    assert {k: lay[k] for k in ("memcpy6.copyKind", "memcpy6.srcKind", "memcpy6.dstKind",
                                "memcpy6.bytes", "memcpy6.start", "memcpy6.end",
                                "memcpy6.deviceId", "memcpy6.streamId")} == {
        "memcpy6.copyKind": 4, "memcpy6.srcKind": 5, "memcpy6.dstKind": 6, "memcpy6.bytes": 8,
        "memcpy6.start": 16, "memcpy6.end": 24, "memcpy6.deviceId": 32, "memcpy6.streamId": 40}
    assert wire.layout_mismatches(lay) == []
    assert (lay["wire.header"], lay["wire.copy"]) == (wire.HEADER.size, wire.COPY.size)


def test_its_datagrams_are_read_back_by_the_reader_as_the_copies_it_sent(
        built: ctbuild.BuildResult, tmp_path: Path) -> None:
    got: list[Record] = []
    done = threading.Event()

    def take(rec: Record) -> None:
        got.append(rec)
        if len(got) == 70:
            done.set()

    reader = CopyTraceReader(str(tmp_path / "ct.sock"), [GpuInfo(index=0, uuid=UUID0_TEXT)],
                             take, None)
    reader.start()
    try:
        assert fresh_copy(built, tmp_path).gapwatch_copytrace_selftest(
            reader.path.encode(), 70) == 70
        assert done.wait(20)
    finally:
        reader.stop()
    copies = [r for r in got if isinstance(r, CopyRecord)]
    assert len(copies) == 70
    first, second, third = copies[:3]
    assert (first.direction, first.host_kind, first.gpu) == ("h2d", "pinned", 0)
    assert (second.direction, second.host_kind, second.gpu) == ("d2h", "pinned", None)
    assert third.host_kind == "pageable" and third.bytes == 3 << 20
    assert first.end_wall_s - first.start_wall_s == pytest.approx(0.0005, abs=1e-6)
    assert [c.correlation_id for c in copies] == list(range(100, 170))
    assert reader.status().bad == 0 and reader.status().dropped == 0


def test_a_reader_that_does_not_drain_never_blocks_the_library_and_learns_its_drops(
        built: ctbuild.BuildResult, tmp_path: Path) -> None:
    got: list[Record] = []
    reader = CopyTraceReader(str(tmp_path / "ct.sock"), [], got.append, None)
    reader.open()  # bound, nobody reading: the queue fills up
    lib = fresh_copy(built, tmp_path)
    n = 100_000
    delivered = lib.gapwatch_copytrace_selftest(reader.path.encode(), n)  # returns, never waits
    assert 0 < delivered < n
    drained, later = threading.Event(), threading.Event()

    def take(rec: Record) -> None:
        got.append(rec)
        if len(got) >= delivered:
            drained.set()
        if len(got) > delivered:
            later.set()

    reader._on_record = take
    reader.start()
    assert drained.wait(20)
    assert lib.gapwatch_copytrace_selftest(reader.path.encode(), 1) == 1
    assert later.wait(20)
    reader.stop()
    # The second round's header carries the first round's drops: the reader counts them.
    assert reader.status().dropped_send == n - delivered


def _c_default(lib: ctypes.CDLL) -> str:
    buf = ctypes.create_string_buffer(256)
    lib.gapwatch_copytrace_default_socket(buf, ctypes.c_size_t(256))
    return buf.value.decode()


def test_the_library_computes_the_default_socket_gapwatch_listens_on(
        built: ctbuild.BuildResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = fresh_copy(built, tmp_path)
    private = tmp_path / "xdg"
    private.mkdir(mode=0o700)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    cases = {"private XDG_RUNTIME_DIR": str(private), "XDG_RUNTIME_DIR others may write to":
             str(shared), "a relative XDG_RUNTIME_DIR": "xdg", "no XDG_RUNTIME_DIR": None}
    for case, xdg in cases.items():
        if xdg is None:
            monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        else:
            monkeypatch.setenv("XDG_RUNTIME_DIR", xdg)
        assert _c_default(lib) == default_socket_path(), case
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(private))
    assert _c_default(lib) == str(private / "gapwatch-copytrace.sock")


def test_the_library_never_sends_to_a_default_folder_others_may_write_to(
        built: ctbuild.BuildResult, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "gapwatch-0"
    folder.mkdir(mode=0o700)
    got: list[Record] = []
    reader = CopyTraceReader(str(folder / "copytrace.sock"), [], got.append, None)
    reader.open()
    try:
        folder.chmod(0o777)  # anyone could now put a socket of theirs there
        lib = fresh_copy(built, tmp_path)
        lib.gapwatch_copytrace_selftest_default.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
        assert lib.gapwatch_copytrace_selftest_default(reader.path.encode(), 5) == 0
        err = capfd.readouterr().err
        assert f"its folder {folder} can be written by others" in err
        folder.chmod(0o700)
        assert lib.gapwatch_copytrace_selftest_default(reader.path.encode(), 5) == 5
    finally:
        reader.stop()


def test_without_a_runtime_folder_the_socket_copytrace_build_prints_is_in_a_private_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import re
    import stat
    from functools import partial

    from gapwatch.cli import main
    from gapwatch.commands import copytrace as command
    from gapwatch.copytrace import socket_path

    # root under systemd: no login session, so no /run/user/0 and no XDG_RUNTIME_DIR.
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(command, "default_socket_path", partial(
        socket_path.default_socket_path, run_user=str(tmp_path / "no-run-user")))
    assert main(["copytrace", "build", "--out", str(tmp_path / "lib"),
                 "--cuda-include", wheel_include()]) == 0
    printed = re.search(r"GAPWATCH_COPYTRACE_SOCKET=(\S+)", capsys.readouterr().out)
    assert printed is not None
    folder = Path(printed.group(1)).parent
    st = folder.lstat()
    # It was /tmp/gapwatch-copytrace-UID.sock: in /tmp, which anyone may write to.
    assert folder != Path("/tmp") and stat.S_ISDIR(st.st_mode)
    assert st.st_uid == os.getuid() and st.st_mode & 0o022 == 0


def test_headers_planted_in_the_current_folder_are_never_searched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    planted = tmp_path / "nvidia" / f"cu{ctbuild.CUDA_MAJOR}" / "include"
    planted.mkdir(parents=True)
    (planted / "cupti.h").write_text("#error planted\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), *sys.path])
    searched = ctbuild.candidate_include_dirs()
    assert planted not in searched and Path("nvidia/cu13/include") not in searched
    assert all(d.is_absolute() for d in searched)
    assert str(planted) not in ctbuild.find_include_dirs()


STUB_CUPTI = Path(__file__).parent / "data" / "hostile" / "stub_libcupti.c"
#: A "prover": loads the library as the CUDA driver does and calls InitializeInjection twice
#: (the driver may), then carries on.
_PROVER = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
print(lib.InitializeInjection(), lib.InitializeInjection(), flush=True)
print("prover goes on", flush=True)
"""


def _stub_cupti(tmp_path: Path) -> Path:
    stub = tmp_path / "libcupti-stub.so"
    cc = ctbuild.find_compiler()
    assert cc is not None
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(stub), str(STUB_CUPTI)], check=True,
                   timeout=120)
    return stub


def _inject(built: ctbuild.BuildResult, tmp_path: Path, cupti_version: int
            ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run `_PROVER` with the library injected over a stub CUPTI of `cupti_version`; return
    the process and the notices gapwatch's reader said."""
    notices: list[str] = []
    reader = CopyTraceReader(str(tmp_path / "ct.sock"), [], lambda rec: None,
                             lambda n: notices.append(n.message))
    reader.start()
    env = {"PATH": "/usr/bin:/bin", "GAPWATCH_CUPTI_LIB": str(_stub_cupti(tmp_path)),
           "GAPWATCH_COPYTRACE_SOCKET": reader.path, "STUB_CUPTI_VERSION": str(cupti_version)}
    try:
        done = subprocess.run([sys.executable, "-c", _PROVER, str(built.library)], env=env,
                              capture_output=True, text=True, timeout=60)
        deadline = time.monotonic() + 10
        while not notices and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        reader.stop()
    return done, notices


@pytest.mark.parametrize("version", [130200, 130400, 120800, 140000])
def test_a_cupti_of_another_release_is_refused_once_said_to_both_logs_and_left_untouched(
        built: ctbuild.BuildResult, tmp_path: Path, version: int) -> None:
    """Issue 29, item 13: only CUPTI's major was checked, so a 13.2 or 13.4 runtime (Device5
    deprecated, Memcpy7) would have been read with 13.0's layouts, silently."""
    done, notices = _inject(built, tmp_path, version)
    assert done.returncode == 0 and done.stdout.splitlines() == ["1 1", "prover goes on"]
    said = [ln for ln in done.stderr.splitlines() if "only the record layouts" in ln]
    release = f"{version // 10000}.{version // 100 % 100}"
    assert len(said) == 1 and f"the loaded CUPTI is {release}" in said[0]
    assert "stub-cupti" not in done.stderr  # neither subscribed nor enabled: CUPTI untouched
    heard = [n for n in notices if "only the record layouts" in n]
    assert len(heard) == 1 and f"CUPTI is {release}" in heard[0]


def test_a_cupti_of_the_release_it_was_built_for_is_traced(
        built: ctbuild.BuildResult, tmp_path: Path) -> None:
    """The control: 13.0 with another update number (the zz of xxyyzz) keeps its layouts."""
    done, _notices = _inject(built, tmp_path, 130002)
    assert done.returncode == 0
    assert "only the record layouts" not in done.stderr
    assert "stub-cupti: cuptiSubscribe" in done.stderr
    assert "tracing host<->device copies" in done.stderr


def _logging_compiler(tmp_path: Path) -> tuple[str, Path]:
    """A compiler that writes its arguments, one a line, to the file returned, then runs the
    real one."""
    real = ctbuild.find_compiler()
    assert real is not None
    log = tmp_path / "cc-argv.txt"
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper), log


@pytest.mark.parametrize("open_one", ["the folder", "a folder above it"])
def test_a_folder_others_may_write_to_is_refused_before_anything_is_compiled(
        tmp_path: Path, open_one: str) -> None:
    """The prover loads the library (as root, often): in a folder another user may write to,
    that user could put their own code in its place. Refused in one line naming the folder,
    nothing compiled or written."""
    shared = tmp_path / "shared"
    shared.mkdir()
    out = shared / "lib" if open_one == "a folder above it" else shared
    out.mkdir(exist_ok=True)
    shared.chmod(0o777)  # writable by others, not sticky
    cc, log = _logging_compiler(tmp_path)
    with pytest.raises(ctbuild.BuildError) as refused:
        ctbuild.build(out, cuda_include=wheel_include(), cc=cc)
    said = str(refused.value)
    assert f"{shared} can be written by others (mode 0777)" in said and "--out" in said
    assert not log.exists() and not any(out.iterdir())


def test_a_sticky_folder_like_tmp_is_a_place_to_install(tmp_path: Path) -> None:
    """Others may add names to a sticky folder (/tmp, 1777) but never replace this user's
    files: the library installs there."""
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    got = ctbuild.build(sticky, cuda_include=wheel_include())
    assert got.library == sticky / ctbuild.LIBRARY_NAME and got.library.is_file()
    assert got.library.stat().st_mode & 0o777 == 0o755


def test_the_compiler_writes_and_the_check_loads_in_a_private_folder_not_the_output_folder(
        tmp_path: Path) -> None:
    """The compiler wrote `-o OUT/.gapwatch_copytrace-XXXX.so` by name and the check loaded
    that name: a link or another library put there between the two was written through or
    loaded. Both now happen in a private temporary folder; the output folder gets the checked
    bytes under a new name, renamed into place."""
    cc, log = _logging_compiler(tmp_path)
    out = tmp_path / "lib"
    got = ctbuild.build(out, cuda_include=wheel_include(), cc=cc)
    argv = log.read_text().splitlines()
    written = Path(argv[argv.index("-o") + 1])
    assert written.parent != out and out not in written.parents
    assert not written.exists()  # the private folder is gone with it
    assert got.library.read_bytes() and sorted(p.name for p in out.iterdir()) == [
        ctbuild.LIBRARY_NAME]


def test_a_link_to_a_folder_under_one_others_may_write_to_is_refused(tmp_path: Path) -> None:
    """`--out mine/lib` where `mine/lib` links to `shared/lib` and `shared` is writable by
    others: the folders of the path as written were judged alone, and passed."""
    shared = tmp_path / "shared"
    (shared / "lib").mkdir(parents=True)
    shared.chmod(0o777)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "lib").symlink_to(shared / "lib")
    cc, log = _logging_compiler(tmp_path)
    with pytest.raises(ctbuild.BuildError) as refused:
        ctbuild.build(tmp_path / "mine" / "lib", cuda_include=wheel_include(), cc=cc)
    assert f"{shared} can be written by others" in str(refused.value)
    assert not log.exists() and not any((shared / "lib").iterdir())


def test_a_folder_made_at_the_out_name_by_another_between_look_and_mkdir_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing `--out` under a sticky folder passed the look (judged by the folder above);
    a folder another user made at its name in between was taken by `mkdir(exist_ok=True)`.
    It is judged again once made (here a folder writable by others stands for it)."""
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    out = sticky / "lib"
    mkdir = Path.mkdir

    def planted_first(self: Path, *args: object, **kwargs: object) -> None:
        if self == out and not out.exists():
            mkdir(out)
            out.chmod(0o777)  # what the other user left there
        mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", planted_first)
    cc, log = _logging_compiler(tmp_path)
    with pytest.raises(ctbuild.BuildError) as refused:
        ctbuild.build(out, cuda_include=wheel_include(), cc=cc)
    assert f"{out} can be written by others (mode 0777)" in str(refused.value)
    assert not log.exists() and not any(out.iterdir())


def test_with_a_tmpdir_others_may_change_it_compiles_under_out_and_prints_an_absolute_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sudo -E` with a user's own `$TMPDIR`: the private compile folder went under a folder
    that user could change (and swap the library the check then loads as root). It goes
    under `--out` then, and leaves nothing there but the library. A relative `--out` printed
    a relative library path, which a systemd unit (run from `/`) finds nowhere."""
    import tempfile

    open_tmp = tmp_path / "usertmp"
    open_tmp.mkdir()
    open_tmp.chmod(0o777)
    monkeypatch.setenv("TMPDIR", str(open_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read $TMPDIR again
    cc, log = _logging_compiler(tmp_path)
    monkeypatch.chdir(tmp_path)
    got = ctbuild.build("rel/lib", cuda_include=wheel_include(), cc=cc)
    out = tmp_path / "rel" / "lib"
    assert got.library == out / ctbuild.LIBRARY_NAME and got.library.is_absolute()
    argv = log.read_text().splitlines()
    assert out in Path(argv[argv.index("-o") + 1]).parents  # compiled under --out
    assert [p.name for p in out.iterdir()] == [ctbuild.LIBRARY_NAME]
    assert not any(open_tmp.iterdir())
