"""gapwatch: see, live, why a pipelined GPU workload stops keeping its GPU busy.

Only the version lives here: importing the package must stay cheap and must not pull in
Textual, plotext or pynvml (headless commands and the core rely on that).
"""

__version__ = "0.1.0"
