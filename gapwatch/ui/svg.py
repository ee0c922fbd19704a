"""The dashboard's screenshot as a snapshot keeps it: an SVG that reads the same on any machine.

Who calls it: `GapwatchApp.take_snapshot`, on the SVG Textual's `export_screenshot` gives. That
SVG asks for the Fira Code web font (two `@font-face` rules fetching it from a CDN); where it
cannot be fetched (no network on a proving box, a viewer that blocks it) the fallback font's
glyphs are wider or narrower than the cells the text was laid out in, and runs of text overlap.
Here the fetch goes (nothing in a snapshot reaches the network), the font stack names common
monospace fonts, and every run of text is fitted to its cells (`lengthAdjust`), so the picture
keeps its columns with whatever font there is. Pure string work.
"""

from __future__ import annotations

import re

#: Monospace fonts found on Linux, macOS and Windows, then the viewer's own.
FONT_STACK = ('"Fira Code", "DejaVu Sans Mono", "Liberation Mono", Menlo, Consolas, '
              '"Courier New", monospace')

_FONT_FACE = re.compile(r"@font-face\s*\{[^}]*\}\s*")
_FAMILY = re.compile(r"font-family:\s*Fira Code,\s*monospace;")
_TEXT_LENGTH = re.compile(r'(<text\b[^>]*\btextLength="[^"]*")')


def self_contained(svg: str) -> str:
    """`svg` without web fonts, each text run squeezed or stretched to its cells."""
    out = _FONT_FACE.sub("", svg)
    out = _FAMILY.sub(f"font-family: {FONT_STACK};", out)
    return _TEXT_LENGTH.sub(r'\1 lengthAdjust="spacingAndGlyphs"', out)
