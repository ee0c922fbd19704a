"""The copy trace: a small C library injected into the prover that names the host memory behind
every host<->device copy, and what gapwatch needs to build it and read what it sends.

Who uses it: `gapwatch copytrace build` (`build.py`: compiles `gapwatch_copytrace.c`, shipped as
package data), the copy-trace source (`gapwatch.sources.copytrace`, which parses datagrams with
`wire.py`), and the tests. See docs/copytrace.md.
"""
