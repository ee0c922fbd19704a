"""The dashboard's own CPU: the UI thread's CPU time (time.thread_time of the event loop's thread)
and the whole process's, over the simulator (`sim:pageable`), 160x48 under Textual's headless
driver. The process figure also holds the simulated prover, the sampler and the log tailer; the
UI thread's is what the dashboard itself costs.

    python3 bench/ui_thread_cpu.py --redraw-hz 10 --seconds 30

Compare two trees by running this in both at the same time (the box's load moves both alike).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gapwatch.config import build_config  # noqa: E402
from gapwatch.engine.runtime import build_runtime  # noqa: E402
from gapwatch.ui import dashboard_app  # noqa: E402

WARMUP_S = 3.0


async def measure(redraw_hz: float, seconds: float) -> str:
    config = build_config({"ui": {"redraw_hz": redraw_hz}, "snapshot": {"auto": False}})
    rt = build_runtime(config, "sim:pageable", speed=1.0)
    rt.start()
    app = dashboard_app(rt)  # as `gapwatch watch` builds it
    try:
        async with app.run_test(size=(160, 48)):
            await asyncio.sleep(WARMUP_S)
            t0, p0, w0 = time.thread_time(), time.process_time(), time.monotonic()
            await asyncio.sleep(seconds)
            t1, p1, w1 = time.thread_time(), time.process_time(), time.monotonic()
    finally:
        rt.stop()
    wall = w1 - w0
    return (f"redraw {redraw_hz:g} Hz: UI thread {100 * (t1 - t0) / wall:.2f} %, process "
            f"{100 * (p1 - p0) / wall:.2f} % ({t1 - t0:.2f} / {p1 - p0:.2f} CPU s over "
            f"{wall:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--redraw-hz", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    print(asyncio.run(measure(args.redraw_hz, args.seconds)), flush=True)


if __name__ == "__main__":
    main()
