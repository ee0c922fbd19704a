"""Base utilities below every layer that runs: clocks (`clock`), the life cycle of a
background thread (`background`), items sorted in bounded memory (`sorted_spool`), a gzip
file's bytes inflated in bounded pieces (`gzip_stream`: recordings and rotated logs alike).

Who uses it: the sources and the log follower (which schedule and stamp with a `Clock` and run
their own threads), the engine, tests. It imports nothing from gapwatch, so any layer may use it;
the pure core still never does (it reads no clock and starts no thread).
"""
