"""TextLines: a widget of rich `Text` rows drawn line by line from cached strips, repainted only
where a row changed.

Who uses it: the dashboard's text widgets (GpuHeader, GapTable, HostPanel, StatusFooter, the
RunLines rows, LogPane). Each builds its rows as `Text` (testable without drawing) and hands them
to `set_rows`; subclasses whose rows depend on the pane's size or on state kept between views
override `build_rows`, which is called again when the size or the styles change.

Why: most of what the dashboard cost was Textual drawing widgets whose rows had not changed.
A widget that hands Textual a `Group` from `render()` is measured, wrapped and cropped through the
console and repainted whole on every `refresh()`, though once a second only a number or two
changed (an open gap's duration, the header's SM %, the footer's lateness). Here each row is cut
to the width and rendered once (`line_strip`, the cells Textual's renderable path gives: a test
compares them), kept while its text and styles are the same (a row that only moved, as log
lines and gap rows do when a new one arrives, keeps its strip), and only the rows that differ
are marked dirty (`refresh(Region)`), so Textual re-styles and sends those alone.

Every row is made visible as it comes in (`visible_row`): what a terminal would act on in
outside text a row quotes (a prover's, a process's, a GPU's name) is written out, never sent.

While text is selected with the mouse the rows are drawn the renderable way (the selection's
highlight); `render()` still returns the rows as one `Group` for copying and for `height: auto`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from rich.cells import cell_len
from rich.console import Console, Group
from rich.segment import Segment
from rich.style import Style
from rich.text import Span, Text
from textual.geometry import Region
from textual.selection import Selection
from textual.strip import Strip
from textual.visual import RichVisual, Visual
from textual.widget import Widget

from gapwatch.core import fmt

#: What a row is, for the strip cache and the change test: its characters, spans and style.
RowKey = tuple[str, tuple[object, ...], object]


def row_key(text: Text) -> RowKey:
    return (text.plain, tuple(text.spans), text.style)


def cut_rows(rows: list[Text], width: int, console: Console) -> list[Text]:
    """The rows as lines at `width`: a row that may wrap and does not fit (or holds a newline or
    a tab) is wrapped as rich would wrap it; every other row is one line as it is."""
    lines: list[Text] = []
    for row in rows:
        plain = row.plain
        if row.no_wrap or (row.cell_len <= width and "\n" not in plain and "\t" not in plain):
            lines.append(row)
        else:
            lines.extend(row.wrap(console, max(1, width)))
    return lines


_JOIN = Text("\n")


def visible_row(row: Text) -> Text:
    """`row` with every character a terminal would act on written out (`fmt.visible`: ESC as
    `\\x1b`, a C1 CSI as `\\x9b`, a right-to-left override as `\\u202e`), its styles on the
    same characters; the row itself when there is none (nearly always, checked in C).

    Why here: every row of the dashboard's text widgets comes through `TextLines`, and a row
    can quote outside text anywhere (a prover's name, a process's, a blind spot's, a hint
    that names them); widgets that forgot `fmt.visible` sent an OSC 52 clipboard write or
    `\\x1b[?1049l` to the terminal raw. Markup needs nothing: a `Text` is never parsed."""
    plain = row.plain
    if plain.isprintable():
        return row
    if "\t" in plain:
        row = expanded_tabs(row)
        plain = row.plain
    if fmt.visible(plain) == plain:
        return row
    # Cut at every span's ends, so each piece is covered whole or not at all by each span:
    # the piece written out keeps its spans over its new length.
    cuts = sorted({at for span in row.spans for at in (span.start, span.end)
                   if 0 < at < len(plain)})
    out = Text(style=row.style, justify=row.justify, overflow=row.overflow,
               no_wrap=row.no_wrap, end=row.end, tab_size=row.tab_size)
    for piece in row.divide(cuts):
        shown = fmt.visible(piece.plain)
        out.append_text(Text(shown, spans=[Span(0, len(shown), span.style)
                                           for span in piece.spans if span.end > span.start]))
    return out


def expanded_tabs(row: Text) -> Text:
    """A copy of `row` with its tabs turned into the spaces up to the next stop, as rich's
    renderable path draws them (`Text.wrap`). `fmt.visible` keeps a tab (a report's and
    `parse`'s lines keep their columns), but a row here is drawn from its own strips
    (`line_strip`), which took it raw: rich measures a tab as 0 cells, and the terminal moved
    its cursor to the next stop without drawing the cells it passed, so a log line of Java's
    `\tat ...` showed the previous screen's characters through them and its end was pushed
    past the pane's edge."""
    row = row.copy()
    row.expand_tabs()
    return row


def line_strip(line: Text, width: int, base: Style, console: Console) -> Strip:
    """One line as Textual's renderable path draws it: cut to `width` with the line's overflow
    (as rich's no-wrap rendering does, `Text.wrap` truncating), its segments over the widget's
    style (as Textual's `_Styled` does); the line's own style under its spans, as rich's
    rendering of a `Text` puts it (`Text.join`). The strip is told its length where it is known
    (else Textual measures every segment of it again): not where a joiner or a variation
    selector makes a character's width depend on its neighbours, which a span may split."""
    simple = _simple_strip(line, width, base, console)
    return simple if simple is not None else rich_strip(line, width, base, console)


def rich_strip(line: Text, width: int, base: Style, console: Console) -> Strip:
    """`line_strip` through rich's rendering of the line, for any line."""
    cells: int | None = line.cell_len
    if cells is not None and cells > width:
        line = line.copy()
        line.truncate(width, overflow=line.overflow)
        # Cut to the width exactly, but where the overflow leaves it as it is ("ignore").
        cells = width if (line.overflow or "fold") in _CUT_TO_WIDTH else None
    if "\u200d" in line.plain or "\ufe0f" in line.plain:
        cells = None
    if line.style:
        line = _JOIN.join([line])
    over = base.__add__
    return Strip([Segment(text, over(style)) for text, style, _ in line.render(console)], cells)


#: Characters one cell wide whatever their neighbours (printable ASCII and the few others the
#: dashboard writes: `·`, `▶`, `…`, arrows, blocks), as rich measures them.
_ONE_CELL = frozenset(ch for ch in (
    *(chr(c) for c in range(0x20, 0x7F)), *"·…°→←↑↓▶■≥≤µ±×│─▁▂▃▄▅▆▇█▓░▒") if cell_len(ch) == 1)


def _simple_strip(line: Text, width: int, base: Style, console: Console) -> Strip | None:
    """`line_strip` of the common line, the quick way: characters of one cell each (`_ONE_CELL`),
    no style of its own, spans that do not overlap (a time, a tag, a word in colour: the log's
    lines, the header's fields). The same cells as rich's rendering gives (a test compares
    them); None for any other line. The prover's log brings ~15 new lines a second, and rich's
    general path (copy, measure, truncate, a style stack per span) was most of their cost."""
    plain = line.plain
    if line.style or width < 1 or not _ONE_CELL.issuperset(plain):
        return None
    overflow = line.overflow or "fold"
    if len(plain) > width:
        if overflow not in _CUT_TO_WIDTH:
            return None
        plain = plain[:width - 1] + "…" if overflow == "ellipsis" else plain[:width]
    end = len(plain)
    segments: list[Segment] = []
    at = 0
    for span in line.spans:
        start, stop = span.start, min(span.end, end)
        if start < at:
            return None  # overlapping spans: rich combines their styles
        if start >= stop:
            continue
        if start > at:
            segments.append(Segment(plain[at:start], base))
        style = span.style if isinstance(span.style, Style) else \
            console.get_style(span.style, default=Style.null())
        segments.append(Segment(plain[start:stop], base + style))
        at = stop
    if at < end:
        segments.append(Segment(plain[at:], base))
    return Strip(segments, end)


#: The overflows that `Text.truncate` cuts a line to the width exactly with.
_CUT_TO_WIDTH = frozenset({"fold", "crop", "ellipsis"})


class TextLines(Widget):
    """Rows of text; `set_rows` repaints the ones that changed."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        #: The rows as built (`set_rows`), before they are cut to the width.
        self._rows: list[Text] = []
        #: The rows as lines at the drawn width, their keys, and each one's strip once drawn.
        self._lines: list[Text] = []
        self._keys: list[RowKey] = []
        self._strips: list[Strip | None] = []
        #: What the lines were cut and drawn for (outer size, style); None: not yet, or the
        #: styles or the selection changed since (`notify_style_update`, `selection_updated`).
        self._drawn_for: tuple[Hashable, ...] | None = None
        #: The width the lines were cut to, and the widget's style under every segment.
        self._width = 0
        self._base = Style()
        #: Whether text was selected when the lines were drawn (then drawn the renderable way).
        self._text_selected = False
        #: Rich styles of the component classes, resolved once (Textual drops its own cache
        #: on every refresh); read again after a style update (`_still_drawn`).
        self._rich_components: dict[str, Style] = {}
        self._restyled = False

    @property
    def lines(self) -> list[Text]:
        """The rows as last shown."""
        return self._rows

    # -- what subclasses call ------------------------------------------------------------------

    def component_style(self, name: str) -> Style:
        """`get_component_rich_style(name)`, kept until the styles change."""
        style = self._rich_components.get(name)
        if style is None:
            style = self._rich_components[name] = self.get_component_rich_style(name)
        return style

    def build_rows(self) -> list[Text]:
        """The rows to show now; called again when the size or the styles changed. By default
        the rows last set (a widget whose rows depend on its size or styles overrides it)."""
        return self._rows

    def set_rows(self, rows: list[Text]) -> None:
        """Show `rows`: the lines that differ from those drawn are repainted, the rest not."""
        rows = [visible_row(row) for row in rows]  # outside text shown, never obeyed
        self._rows = rows
        if not self._still_drawn() or self._text_selected:
            # Not drawn at this size and style yet (or text is selected): drawn whole when
            # next asked.
            self._drawn_for = None
            self.refresh()
            return
        width = self._width
        lines = cut_rows(rows, width, self.app.console)
        keys = [row_key(line) for line in lines]
        old = dict(zip(self._keys, self._strips, strict=True))
        refresh_changed(self, self._keys, keys, width)
        # A line that only moved (a new log line or gap pushed it down) keeps its strip.
        self._strips = [old.get(key) for key in keys]
        self._lines, self._keys = lines, keys

    # -- drawing -------------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # Textual calls this on every style pass (a resize that crosses no breakpoint, a
        # screen resumed), mostly with nothing changed: the component styles are compared
        # when next needed, and the lines drawn again only if they changed.
        self._restyled = True

    def selection_updated(self, selection: Selection | None) -> None:
        self._drawn_for = None  # drawn again, the renderable way while text is selected
        super().selection_updated(selection)

    def _draw_key(self) -> tuple[Hashable, ...]:
        """What the drawn lines depend on besides their rows and component styles, cheap to
        read on every line Textual asks for (the content size and the selection cost a walk
        up the DOM each; the selection is followed by `selection_updated`)."""
        return (self.outer_size, self.styles.gutter, self.visual_style)

    def _still_drawn(self) -> bool:
        """Whether the lines drawn are right for the widget's size and styles now."""
        if self._restyled:
            self._restyled = False
            used = self._rich_components
            if {name: self.get_component_rich_style(name) for name in used} != used:
                self._rich_components = {}
                self._drawn_for = None  # the styles are baked into the rows and the strips
        return self._drawn_for == self._draw_key()

    def _recut(self) -> None:
        size = self.size
        self._width = size.width
        self._base = self.visual_style.rich_style
        self._text_selected = self.text_selection is not None
        self._rows = [visible_row(row) for row in self.build_rows()]
        self._lines = cut_rows(self._rows, size.width, self.app.console)
        self._keys = [row_key(line) for line in self._lines]
        self._strips = [None] * len(self._lines)
        if self._text_selected:
            # The renderable way, for the selection's highlight.
            self._strips = list(Visual.to_strips(
                self, RichVisual(self, Group(*self._lines)), size.width, size.height,
                self.visual_style))

    def render_line(self, y: int) -> Strip:
        if not self._still_drawn():
            self._drawn_for = self._draw_key()
            self._recut()
        if y >= len(self._strips):
            return Strip.blank(self._width, self._base)
        strip = self._strips[y]
        if strip is None:
            strip = line_strip(self._lines[y], self._width, self._base, self.app.console)
            self._strips[y] = strip
        return strip

    def render(self) -> Group:
        """The rows as one renderable (a copy of selected text, a `height: auto` measure)."""
        return Group(*self._rows)


def refresh_changed(widget: Widget, old: Sequence[object], new: Sequence[object],
                    width: int) -> None:
    """Mark dirty only the rows of `widget` that differ between what it drew (`old`) and what
    it will draw (`new`): Textual re-styles and sends those alone (a whole-widget `refresh()`
    re-styles every row, changed or not)."""
    changed = [y for y in range(max(len(old), len(new)))
               if y >= len(old) or y >= len(new) or old[y] != new[y]]
    if changed:  # one call: each `refresh` clears caches and prompts the widget's task
        widget.refresh(*(Region(0, y0, width, y1 - y0) for y0, y1 in _runs(changed)))


def _runs(ys: list[int]) -> list[tuple[int, int]]:
    """Sorted line numbers as [start, end) runs of consecutive lines."""
    runs: list[tuple[int, int]] = []
    for y in ys:
        if runs and runs[-1][1] == y:
            runs[-1] = (runs[-1][0], y + 1)
        else:
            runs.append((y, y + 1))
    return runs
