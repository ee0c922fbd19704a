"""The pure core: what a reading, a gap and a chaining state are, and the rules that decide them.

Modules: `models` (the records everyone shares), `config` (the validated TOML config),
`readings` (what counts as a reading; GPM staleness), `detector` + `track` (gaps and chaining
states, fed one record at a time), `ledger` (the one rule that turns published gap versions into
"the gaps"), `evidence` (host pressure, prover events and prover status snapshots around each
gap), `prover` (where the prover's own `/status` says a gap waited), `hints` (the words), `fmt`
(number formatting shared by every text output).

Who uses it: everything else (engine, sources, logs, sinks, offline, ui). No threads, clocks or
I/O here (config reads its one file when asked), and no Textual, plotext,
pynvml or psutil: the engine, the offline tools and the UI build on this, never the reverse.
"""
