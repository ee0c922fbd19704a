"""Tools over recorded data: `report` (gaps, breakdowns, payoff; `detect` is the one detection
loop, `report_parallel` splits it across processes) and the exports (`perfetto`, `csv_export`).

Who uses it: `gapwatch report`, `gapwatch export`, tests and bench/. Headless: no Textual.
"""
