"""cuzk knowledge: what upstream's daemon logs and serves, read for gapwatch.

Who uses it: `gapwatch.offline.compare` (`settings`: the prover's settings as its startup lines
and `/status` show them, and which changed between two runs); the advice (`paths`: the upstream
paths a/b/c take, and what to change for each). Being assembled from `gapwatch.core.cuzk`,
`gapwatch.core.advice` and the cuzk log rules; new cuzk knowledge lands here directly.
"""
