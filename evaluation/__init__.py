"""Evaluation helpers for tests and bench/ only (not shipped with gapwatch): scoring detected gaps
against ground truth (`scoring`), and running the simulated prover to completion (`simulate`).
"""
