"""The command line: a pointer to `gapwatch demo` when run bare, `--version`, each subcommand
taking only the flags it uses, flags a source cannot honour refused, bad numbers refused by
argparse (exit 2 with a message, never a hang, a traceback or an empty file)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA

from gapwatch import __version__
from gapwatch.cli import main


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own errors (and --version) exit
        return int(exc.code or 0)


def test_bare_gapwatch_prints_a_short_usage_pointing_at_the_demo(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "gapwatch demo" in err and "record" in err and "--help" in err


def test_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"gapwatch {__version__}"


@pytest.mark.parametrize("argv", [
    ["report", str(DATA / "pageable.csv"), "--speed", "2"],
    ["report", str(DATA / "pageable.csv"), "--source", "sim"],
    ["export", str(DATA / "pageable.csv"), "--prometheus", "9400"],
    ["parse", str(DATA / "pinned.log"), "--seed", "3"],
    ["replay", str(DATA / "pageable.csv"), "--period-ms", "50"],
    ["demo", "--gpus", "0"],
])
def test_subcommands_refuse_common_flags_they_would_ignore(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(argv) == 2
    assert "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.parametrize("argv, says", [
    (["record", "--source", "sim", "--gpus", "0,1", "--out", "OUT"], "--gpus"),
    (["watch", "--source", f"replay:{DATA / 'pageable.csv'}", "--gpus", "1"], "--gpus"),
    (["record", "--speed", "2", "--out", "OUT"], "--speed"),
    (["record", "--source", f"replay:{DATA / 'pageable.csv'}", "--seed", "2", "--out", "OUT"],
     "--seed"),
])
def test_flags_the_source_cannot_honour_are_an_error(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    assert main([str(out) if a == "OUT" else a for a in argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-5", "0", "ten"])
def test_nonsense_durations_are_refused_before_anything_starts(
        value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.jsonl"
    assert _exit_code(["record", "--source", "sim", "--speed", "0", "--out", str(out),
                       "--duration", value]) == 2
    assert "--duration" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("flag, value", [("--speed", "nan"), ("--speed", "-1"),
                                         ("--speed", "inf"), ("--period-ms", "0"),
                                         ("--period-ms", "nan")])
def test_nonsense_speeds_and_periods_are_refused(
        flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(["record", "--source", "sim", "--out", "unused.jsonl", flag, value]) == 2
    assert flag in capsys.readouterr().err


def test_parse_of_a_missing_log_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "/nonexistent.log"]) == 2
    assert "/nonexistent.log: cannot read" in capsys.readouterr().err


def test_parse_of_a_directory_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["demo"], ["replay", str(DATA / "pageable.csv")]],
                         ids=["demo", "replay"])
def test_the_dashboard_without_a_terminal_refuses_and_names_the_headless_way(
    argv: list[str], tmp_path: Path
) -> None:
    """`gapwatch demo > out 2>&1`: nobody can see a dashboard, and it would write screen
    updates to the file until killed."""
    import subprocess
    import sys

    out = tmp_path / "out.txt"
    with out.open("w") as fh:
        done = subprocess.run([sys.executable, "-m", "gapwatch", *argv], stdout=fh,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=60)
    text = out.read_text()
    assert done.returncode == 2
    assert "standard error is not one" in text and "headless" in text
    assert "\x1b[" not in text  # not one screen update written


def test_a_compiler_asked_for_that_is_not_there_is_an_error_not_a_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """`copytrace build --cc nosuchcc` built with `cc` and exited 0; a flag the command cannot
    honour is an error (and so is a `$CC` that is not there)."""
    out = tmp_path / "out"
    assert main(["copytrace", "build", "--cc", "nosuchcc-gapwatch", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gapwatch copytrace: --cc nosuchcc-gapwatch: not found on PATH")
    monkeypatch.setenv("CC", "nosuchcc-either")
    assert main(["copytrace", "build", "--out", str(out)]) == 2
    assert "$CC nosuchcc-either: not found on PATH" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())


def test_a_mistyped_flag_gets_its_commands_usage_and_the_nearest_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`report --jsn` showed the top-level usage with no suggestion."""
    assert _exit_code(["report", str(DATA / "pageable.csv"), "--jsn"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: gapwatch report ")
    assert err.rstrip().endswith("gapwatch report: error: unrecognized arguments: --jsn "
                                 "(--jsn: did you mean --json?)")
    assert _exit_code(["replay", str(DATA / "pageable.csv"), "--period-ms", "50"]) == 2
    err = capsys.readouterr().err  # no far-fetched guess (--prometheus is not near)
    assert err.rstrip().endswith("unrecognized arguments: --period-ms 50")


def test_parse_of_a_binary_file_says_so_in_one_line_instead_of_printing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """`parse` of a binary file dumped a screen of escaped bytes; a log with an odd byte is
    still parsed."""
    binary = tmp_path / "core.dump"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    noise = tmp_path / "noise.log"
    noise.write_bytes(bytes(range(1, 32)) * 40)  # no NUL, but hardly text
    log = tmp_path / "ok.log"
    log.write_bytes(b"TIMELINE,100,GPU_START,job-1,worker=0,partition=1\n\xff odd byte\n")
    assert main(["parse", str(binary), str(noise), str(log)]) == 2
    out, err = capsys.readouterr()
    assert f"gapwatch parse: {binary}: a binary file, not a text log (" in err
    assert f"{noise}: a binary file, not a text log (" in err
    assert "ELF" not in out and "GPU_START" in out


def test_a_command_imports_no_other_commands_module() -> None:
    """`gapwatch report` does not pay for `record`'s sampling engine (~45 ms of imports a
    start), yet `--help` still lists every command."""
    code = (
        "import sys\nfrom gapwatch.cli import build_parser, chosen_command\n"
        "parser = build_parser(chosen_command(['report', 'x.jsonl']))\n"
        "print(sorted(m for m in sys.modules if m.startswith('gapwatch.commands.')"
        " and m != 'gapwatch.commands.argtypes'))\n"
        "print('gapwatch.engine.runtime' in sys.modules, 'record' in parser.format_help())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.stdout.split("\n")[:2] == ["['gapwatch.commands.report']", "False True"], out.stderr


@pytest.mark.parametrize("argv", [
    ["fleet", "--prometheus", "http://127.0.0.1:1", "--once", "--timeout", "1e26"],
    ["fleet", "--prometheus", "http://127.0.0.1:1", "--once", "--refresh", "1e26"],
    ["compare", "B", "A", "--window", "99999999999999999999999999"],
    ["record", "--source", "sim", "--speed", "0", "--out", "OUT", "--duration", "1e20"],
    ["record", "--source", "sim", "--out", "OUT", "--on-event-timeout", "1e20"],
])
def test_seconds_beyond_ten_years_are_refused_not_an_overflow_in_a_timeout(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `fleet --timeout 1e26` reached socket.settimeout: an OverflowError traceback.
    out = tmp_path / "r.jsonl"
    assert _exit_code([str(out) if a == "OUT" else a for a in argv]) == 2
    err = capsys.readouterr().err
    assert "at most 10 years" in err and "Traceback" not in err
    assert not out.exists()


_LONG_NAME = "n" * 300  # one name beyond NAME_MAX (255)
_LONG_PATH = "/" + "x" * 5000  # beyond PATH_MAX (4096)


@pytest.mark.parametrize("bad", [_LONG_NAME, _LONG_PATH, ""], ids=["name300", "path5000", "empty"])
@pytest.mark.parametrize("argv", [
    ["report", str(DATA / "pageable.csv"), "--config", "BAD"],
    ["report", "BAD"],
    ["report", str(DATA / "pageable.csv"), "--log", "BAD"],
    ["replay", "BAD", "--headless"],
    ["export", str(DATA / "pageable.csv"), "--out", "BAD"],
    ["export", "BAD", "--out", "OUT"],
    ["compare", "BAD", str(DATA / "pageable.csv")],
    ["compare", str(DATA / "pageable.csv"), str(DATA / "pageable.csv"), "--after-log", "BAD"],
    ["parse", str(DATA / "pageable.log"), "--timeline", "--recording", "BAD"],
    ["parse", "BAD"],
    ["record", "--source", "sim", "--speed", "0", "--duration", "1", "--out", "BAD"],
    ["record", "--source", "replay:BAD", "--speed", "0", "--out", "OUT"],
    ["copytrace", "build", "--out", "OUT", "--cuda-include", "BAD"],
    ["demo", "--record", "BAD"],
], ids=lambda a: " ".join(a[:1] + [x for x in a if x.startswith("-")][:2]))
def test_a_path_of_a_300_character_name_or_5000_characters_is_refused_not_enametoolong(
        argv: list[str], bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # pathlib's exists()/is_dir() raise ENAMETOOLONG instead of answering (Python 3.11):
    # `--config`, `replay FILE`, `export --out`, `parse --recording`, `--cuda-include` and
    # `--source replay:FILE` of such a path were tracebacks; `export ''` a ValueError.
    out = tmp_path / "out"
    code = _exit_code([str(out) if a == "OUT" else a.replace("BAD", bad) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "longer than the system takes" in err or "an empty path" in err
    assert len(err) < 2000  # the 5000-character path is not echoed back
    assert not out.exists()


def test_an_xdg_config_home_of_5000_characters_is_one_line_not_enametoolong(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", _LONG_PATH)
    assert main(["report", str(DATA / "pageable.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "$XDG_CONFIG_HOME" in err and "longer than" in err


@pytest.mark.parametrize("argv", [["report", str(DATA / "pageable.csv")],
                                  ["compare", str(DATA / "pageable.csv"),
                                   str(DATA / "pinned.csv")]], ids=["report", "compare"])
def test_pythonioencoding_ascii_escapes_what_it_cannot_encode_instead_of_a_traceback(
        argv: list[str]) -> None:
    # report's `≥` and compare's `×` were a UnicodeEncodeError traceback mid-output.
    done = subprocess.run([sys.executable, "-m", "gapwatch", *argv], capture_output=True,
                          env={**os.environ, "PYTHONIOENCODING": "ascii",
                               "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert b"Traceback" not in done.stderr and b"\\u" in done.stdout


def test_a_folder_with_no_name_as_the_input_or_the_segments_base_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """`export / --out x.json` named its default output beside `/` (a ValueError traceback,
    even with --out given); `record --rotate-size --out /` named its segments so; `--out DIR`
    with a rotation wrote DIR.000001.jsonl beside the folder."""
    monkeypatch.chdir(tmp_path)
    assert main(["export", "/", "--out", str(tmp_path / "x.json")]) == 2
    assert "no gapwatch recording in it" in capsys.readouterr().err
    for out in ("/", str(tmp_path)):
        assert main(["record", "--source", "sim:pageable", "--speed", "0", "--duration", "1",
                     "--rotate-size", "1MiB", "--out", out]) == 2
        err = capsys.readouterr().err
        assert "is a directory; give a file name inside it" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == [] and not Path(f"{tmp_path}.000001.jsonl").exists()


@pytest.mark.parametrize("command", ["record", "watch"])
def test_on_event_help_names_every_event_it_runs_the_command_for(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` said only "when a GPU enters or leaves BREAKDOWN", while the hook also runs on a
    late PoSt, a prover restart and a prover error (docs/fleet.md, README); then it left out the
    GPU's own errors (`gpu_hardware_error`: an XID, uncorrected ECC errors, the GPU lost)."""
    assert _exit_code([command, "--help"]) == 0
    words = " ".join(capsys.readouterr().out.split())
    assert "--on-event CMD run CMD" in words
    for said in ("enters or leaves BREAKDOWN", "a PoSt goes late", "the prover restarts",
                 "a prover error", "a GPU error NVML reports", "XID", "the GPU lost"):
        assert said in words, said


@pytest.mark.parametrize("command", ["record", "demo"])
def test_a_simulator_speed_its_clock_cannot_hold_is_refused_not_an_unreadable_recording(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`record --source sim --speed 1e300`: the simulated clock ran 1e300 ns a real ns, every
    record of the recording it wrote stood beyond 64 bits (`report`: all bad records) and its
    closing line gave a tick lateness of 130 digits; `--speed 1e9 --duration 1` never ended.
    A replay paces with the recording's own times and takes any speed. The speed the refusal
    advises is one the command takes: `demo --speed 1001` advised `--speed 0`, which demo
    refuses."""
    out = tmp_path / "sim.jsonl"
    argv = [command, "--speed", "1e300", "--record" if command == "demo" else "--out", str(out)]
    if command == "record":
        argv += ["--source", "sim", "--duration", "1"]
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err
    assert "--speed" in err and "1000" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()
    advised = re.search(r"; --speed (\S+)", err)
    assert advised is not None, err
    argv[2] = advised.group(1)
    _exit_code(argv)  # demo then stops at its terminal check: none under pytest
    assert "--speed" not in capsys.readouterr().err


def test_the_scaled_clock_refuses_a_speed_whose_times_it_cannot_hold() -> None:
    from gapwatch.base.clock import MAX_SCALED_SPEED, ScaledClock

    assert ScaledClock(MAX_SCALED_SPEED).speed == MAX_SCALED_SPEED
    with pytest.raises(ValueError, match="at most"):
        ScaledClock(MAX_SCALED_SPEED * 10)


@pytest.mark.parametrize("argv", [
    ["report", "r.jsonl", "--x\x1b]52;c;aGk=\x07\nforged: line"],
    ["report", "r.jsonl", "extra\x1b]52;c;aGk=\x07\nforged: line"],
], ids=["unknown-flag", "extra-argument"])
def test_an_argument_holding_escapes_or_a_newline_reaches_no_terminal_through_a_usage_error(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's `unrecognized arguments: ...` quotes the words as given (`invalid choice`
    quotes them by repr): an OSC 52 clipboard write reached the terminal, and a newline started
    a line of its own (`forged: line`), where every other line gapwatch writes is one line."""
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert not any(line.startswith("forged") for line in err.splitlines())
    assert "\\x1b]52;c;aGk=\\x07\\x0aforged: line" in err


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert _exit_code([command, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())  # argparse's wrapping undone


@pytest.mark.parametrize("command", ["report", "replay", "export"])
def test_the_offline_commands_help_says_file_may_be_a_folder_and_the_log_is_read_whole(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Their help said FILE is one recording or a CSV (a folder or a glob of segments works:
    # README), and `--log` a "prover log to follow ... '-' = stdin": they read it whole, and
    # `-` is no file to them.
    text = _help(command, capsys)
    assert "a folder or a quoted glob of its segments" in text
    assert "prover log, read whole" in text
    assert "to follow" not in text and "'-' = stdin" not in text


def test_the_demo_help_offers_no_speed_the_demo_refuses(
        capsys: pytest.CaptureFixture[str]) -> None:
    # `demo --help`: "0 = as fast as possible"; `demo --speed 0`: refused.
    text = _help("demo", capsys)
    assert "--speed SPEED simulator speed: 1 = real time (default)" in text
    assert "0 = as fast as possible" not in text
    assert _exit_code(["demo", "--speed", "0"]) == 2


def test_the_live_commands_help_still_follows_the_log_and_takes_stdin(
        capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("watch", "record", "demo"):
        assert "prover log to follow (repeatable; '-' = stdin)" in _help(command, capsys)


def test_the_dashboard_on_a_terminal_of_no_size_refuses_and_says_how_to_give_it_one(
    tmp_path: Path,
) -> None:
    """A pseudo-terminal nobody gave a size (0x0: `script` with no terminal behind it): the
    dashboard laid itself out again and again at 100 % of a core, and a SIGTERM was never
    served. It refuses in one line, exit 2, naming `stty` and the headless way."""
    import os
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()  # a new pty's size is 0x0
    try:
        done = subprocess.run([sys.executable, "-m", "gapwatch", "demo"], stdin=follower,
                              stdout=follower, stderr=follower, timeout=60, cwd=tmp_path)
        os.close(follower)
        said = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the follower side is closed and drained
                break
            if not chunk:
                break
            said += chunk
    finally:
        os.close(leader)
    text = said.decode(errors="replace")
    assert done.returncode == 2, text
    assert "size is 0x0" in text and "stty cols 80 rows 24" in text and "headless" in text
