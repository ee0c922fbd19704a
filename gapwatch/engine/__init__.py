"""The live wiring: the sampler, the session hub, the store, and the
runtime that builds one session from a `--source` and owns (and closes) everything it opened.

Who uses it: the commands (`watch`, `demo`, `record`, `replay`), the dashboard (through the
runtime and the store), `evaluation.simulate`. It never imports Textual.
"""
