"""The entry point of `evaluation/pane_gpu.py` (its docstring says what it does and how).

Run it from the repository root: `python3 bench/pane_gpu.py`. Tests import the module from
evaluation/, never from bench/.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.pane_gpu import main  # noqa: E402 - the checkout's root, on the path above

if __name__ == "__main__":
    raise SystemExit(main())
