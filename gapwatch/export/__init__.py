"""Getting gapwatch's data into other tools: Prometheus, Perfetto / chrome://tracing, CSV.

- `prometheus`: a `/metrics` endpoint fed live by a session (`start_exporter`), called by the
  runtime when `--prometheus HOST:PORT` (config `prometheus.listen`) is set.
- `perfetto`: a recording as Chrome Trace Event JSON (`gapwatch export --format perfetto`).
- `csv_export`: a recording as a CSV in the shared-trace column layout (`--format csv`), which
  `gapwatch.record.read_any` (hence `replay` and `report`) reads back.

None of these modules imports Textual or plotext: export is core, it runs headless.
"""
