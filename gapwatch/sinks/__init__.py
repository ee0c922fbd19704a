"""Where a live session's records go: the recorder (JSON Lines recordings), snapshots (a folder
with what the user saw), and the Prometheus exporter (`metrics` counts, `prometheus` serves).

Who uses it: the runtime attaches the recorder and the exporter to a session; the dashboard
writes snapshots. None of these imports Textual.
"""
