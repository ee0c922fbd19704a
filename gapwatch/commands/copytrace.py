"""`gapwatch copytrace build [--cuda-include DIR] [--out DIR] [--cc CC] [--unit NAME]`: build and
install the copy-trace library on this box, and print the line to add to the prover's environment.

Who calls it: `gapwatch.cli`. The work is in `gapwatch.copytrace.build`; docs/copytrace.md says
what the library does, what it costs, what it cannot see and how to turn it off. Exit codes: 0
built and checked, 2 no compiler, no headers, a compile error or a layout this gapwatch cannot read.
"""

from __future__ import annotations

import argparse
import os

from gapwatch.commands import argtypes
from gapwatch.config import Config
from gapwatch.copytrace.build import BuildError, build, install_instructions
from gapwatch.copytrace.socket_path import default_socket_path, make_private_folder
from gapwatch.engine.console import say


def add_copytrace_flag(p: argparse.ArgumentParser) -> None:
    """`--copytrace [PATH]` of `watch` and `record` (`gapwatch.cli.resolve_config` applies it)."""
    p.add_argument("--copytrace", nargs="?", const="", default=None, metavar="PATH",
                   help="read the copy trace (pinned vs pageable per copy) from the library "
                        "injected into the prover; PATH = its socket (default: in "
                        "$XDG_RUNTIME_DIR or /run/user/UID, else /tmp/gapwatch-UID, a folder "
                        "only you can write to); see `gapwatch copytrace build`")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["build"], help="build: compile, check and install")
    p.add_argument("--cuda-include", type=argtypes.path, default=None, metavar="DIR",
                   help="folder with cupti.h and cuda.h (default: $CUDA_HOME/include, "
                        "$CUDA_PATH/include, "
                        "/usr/local/cuda/include, then the nvidia-cuda-* wheels)")
    p.add_argument("--out", type=argtypes.path, default=None, metavar="DIR",
                   help="where to install libgapwatch_copytrace.so "
                        "(default: $XDG_DATA_HOME/gapwatch or ~/.local/share/gapwatch)")
    p.add_argument("--cc", default=None, help="C compiler (default: $CC, cc, gcc, clang)")
    p.add_argument("--unit", default="cuzk", help="systemd unit of the prover (for the "
                                                  "printed drop-in; default cuzk)")


def run(args: argparse.Namespace, config: Config) -> int:
    try:
        result = build(args.out, cuda_include=args.cuda_include, cc=args.cc)
    except BuildError as exc:
        say(*f"gapwatch copytrace: {exc}".split("\n"))  # a compile error: the compiler's lines
        return 2
    socket_path = config.copytrace.socket or default_socket_path()
    if not config.copytrace.socket:
        # Made now (mode 0700), so that nobody else can take the default's folder first.
        folder = os.path.dirname(socket_path)
        why = make_private_folder(folder)
        if why is not None:
            say(f"gapwatch copytrace: the default socket's folder {folder} {why}: neither "
                "gapwatch nor the library will use it; remove it, or give a path in a folder "
                "of yours ([copytrace] socket)")
            return 2
    print(f"built {result.library}")
    print(f"  headers: {', '.join(result.include_dirs)}; compiler: {result.compiler}")
    cupti = result.cupti_library or "libcupti.so.13 from the loader path"
    print(f"  libcupti loaded at run time: {cupti}")
    print(f"  checked: CUPTI {result.layout.get('cupti_api')} record layout and wire format "
          f"v{result.layout.get('wire.version')} match this gapwatch")
    print()
    print(install_instructions(result.library, socket_path, args.unit), end="")
    return 0
