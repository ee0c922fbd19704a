"""`gapwatch fleet`'s headless half: every box's verdict, read from Prometheus's HTTP query API.

gapwatch never scrapes the boxes itself: Prometheus already does (deploy/prometheus). This
package asks it (`client`: bounded HTTP, typed decoding), with the queries in one table
(`queries`), and turns the answers into one row per box and GPU, worst first (`rows`), and a
box's recent history (`detail`). Who calls it: `gapwatch.commands.fleet` (`--once --json`) and
the Textual screen `gapwatch.ui.fleet`. It never imports Textual; it imports only the core.
"""
