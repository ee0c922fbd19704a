"""cuzk knowledge: what cuzk (Curio's Groth16 proving daemon) writes and what it means.

Who calls it: the log parser (`gapwatch.logs.parse`: panic blocks), the live session and the
offline detection loop (`gapwatch.cuzk.watch.CuzkWatch`: PoSt latency, restarts, errors, lost
GPU jobs, as `gapwatch.core.models.ProverEvent`s). Pure: imports only the core.
"""
