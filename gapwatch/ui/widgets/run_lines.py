"""RunLines: a widget of a few one-line rows, each a list of (text, style key) runs.

Who uses it: `PipelineLine` (the prover's pipeline) and `CopyLine` (H2D bytes by memory kind):
both build plain runs from the View (testable without Textual) and hand them to `show_lines`.
It stays hidden until it has a first row, repaints only the rows that changed (`TextLines`),
and lays out again only when the number of rows did. A row is cut at the pane's width with an
ellipsis: the widgets put their most important facts first.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from gapwatch.ui.widgets.text_lines import TextLines

Runs = list[tuple[str, str]]


class RunLines(TextLines):
    """Rows of styled runs; subclasses name their component classes in `STYLE_CLASSES`."""

    #: Style key of a run -> the component class that styles it (unknown keys: unstyled).
    STYLE_CLASSES: ClassVar[dict[str, str]] = {}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._runs: list[Runs] = []

    def show_lines(self, lines: list[Runs]) -> None:
        if lines and not self.display:
            self.display = True
        if lines != self._runs:
            if len(lines) != len(self._runs):
                self.refresh(layout=True)
            self._runs = lines
            self.set_rows(self.build_rows())

    def build_rows(self) -> list[Text]:
        styles = {key: self.component_style(cls) for key, cls in self.STYLE_CLASSES.items()}
        out = []
        for runs in self._runs:
            line = Text(no_wrap=True, overflow="ellipsis")
            for text, key in runs:
                line.append(text, styles.get(key, ""))
            out.append(line)
        return out
