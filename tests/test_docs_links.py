"""Every relative link in README.md and docs/*.md reaches a file that exists, and every
`#anchor` in one names a heading of the page it points at, by GitHub's rule for a heading's
anchor (`github_anchor`): five links went to anchors whose headings had been renamed, and
nothing noticed. Links to the web are not followed (no network in the tests). And every flag of
every command is named in them for that command (`copytrace --unit` was in its --help only;
`fleet --seed` passed as the simulator's flag)."""

from __future__ import annotations

import argparse
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: An inline link or image `[text](target)` or `[text](target "title")`.
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading's text (its `github-slugger`): markup rendered away
    (code spans keep their text, a link its words), lower case, every character that is not a
    letter, digit, `_`, `-` or space dropped, each space a `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its words
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").lower()
    return "".join(c for c in text if c.isalnum() or c in "_- ").replace(" ", "-")


#: What a line of a page is to the fence walker (`_walk`): a fence (opening or closing a code
#: block), a line inside a code block, or text.
LineKind = Literal["fence", "code", "text"]


def _walk(text: str) -> Iterator[tuple[int, str, LineKind]]:
    """Each line of a page (numbered from 1) and what it is: the one fence walker of the
    link check and the flag check."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            yield n, line, "fence"
        else:
            yield n, line, "code" if fenced else "text"


def _outside_code(text: str) -> list[tuple[int, str]]:
    """The page's lines (numbered from 1) outside fenced code blocks: a `[x](y)` or
    `# comment` in a code block is no link or heading. Code spans are left in (`broken_links`
    blanks them; a heading keeps their text)."""
    return [(n, line) for n, line, kind in _walk(text) if kind == "text"]


def anchors_of(page: Path) -> set[str]:
    """Every anchor the page's headings give, a repeated one suffixed `-1`, `-2`... as GitHub
    does."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _n, line in _outside_code(page.read_text()):
        m = _HEADING.match(line)
        if m is None:
            continue
        slug = github_anchor(m.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """`page:line: target: why` for each relative link of `page` that reaches nothing (the
    paths said relative to `root`)."""
    out = []
    anchors: dict[Path, set[str]] = {}  # each page linked to read once, not once a link
    for n, line in _outside_code(page.read_text()):
        for target in _LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not followed here
                continue
            path_part, _, anchor = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            if not dest.exists():
                out.append(f"{page.relative_to(root)}:{n}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in _cached(anchors, dest):
                out.append(f"{page.relative_to(root)}:{n}: {target}: no heading of "
                           f"{dest.relative_to(root)} has that anchor")
    return out


def _cached(anchors: dict[Path, set[str]], page: Path) -> set[str]:
    """`anchors_of(page)`, read once into `anchors`."""
    if page not in anchors:
        anchors[page] = anchors_of(page)
    return anchors[page]


@pytest.mark.parametrize("heading, anchor", [
    ("The simulator (`--source sim:post`) and post-failed", "the-simulator---source-simpost-and-"
     "post-failed"),
    ("GPU errors: XID, ECC, PCIe replays, row remapping",
     "gpu-errors-xid-ecc-pcie-replays-row-remapping"),
    ("What `report --json` holds", "what-report---json-holds"),
    ("See [docs/fleet.md](docs/fleet.md) first", "see-docsfleetmd-first"),
    ("Über 100 % busy_s", "über-100--busy_s"),
])
def test_a_heading_gets_the_anchor_github_gives_it(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


def test_a_repeated_heading_gets_the_next_number_and_code_holds_no_heading(
        tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# Notes\n\n```sh\n# not a heading\n```\n\n## Notes\n")
    assert anchors_of(page) == {"notes", "notes-1"}


def test_a_link_to_a_missing_anchor_or_file_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Here it is\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#here-it-is) [gone](a.md#here-it-was) [none](c.md)\n"
                    "`[code](x.md)` [web](https://example.com/#nope) [self](#top)\n# Top\n")
    assert broken_links(page, tmp_path) == [
        "b.md:1: a.md#here-it-was: no heading of a.md has that anchor",
        "b.md:1: c.md: no such file"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_and_anchor_of_the_docs_resolves(page: Path) -> None:
    assert broken_links(page) == []


#: What ends a clause of a paragraph, for `flags_named_for`: a table's cell, `;`, `: `.
_CLAUSE_END = re.compile(r" \| |;|: ")
#: Pages that name no command's flag for it: the benchmarks' own tools, and the bad inputs
#: (among them flags a command refuses: `report --speed`).
_NOT_FLAG_PAGES = ("benchmarks.md", "bad-input.md")


@functools.cache
def _command_named(command: str) -> re.Pattern[str]:
    """What names `command` in a text: `` `report ``, `gapwatch report` or `report --` (the
    command, not the word)."""
    return re.compile(rf"`{command}\b|gapwatch {command}\b|\b{command} --")


def _paragraphs(text: str) -> list[tuple[str, str]]:
    """(heading above, text) of each paragraph of a page, its lines joined (a table is one:
    its cells are clauses), and of each line of a fenced code block."""
    out: list[tuple[str, str]] = []
    heading = ""
    held: list[str] = []
    for _n, line, kind in [*_walk(text), (0, "", "text")]:  # a blank line ends the last
        m = _HEADING.match(line) if kind == "text" else None
        if kind != "text" or m or not line.strip():
            if held:
                out.append((heading, " ".join(held)))
                held = []
            if kind == "code":
                out.append((heading, line))
            elif m:
                heading = m.group(2)
            continue
        held.append(line.strip())
    return out


@functools.cache
def _clauses(page: Path) -> list[tuple[str, list[str]]]:
    """(heading above, clauses) of each paragraph of `page` (`_paragraphs`), read and split
    once a process: `unnamed_flags` looks through every page for each of the ten commands,
    and the flag tests run it three times."""
    return [(heading, _CLAUSE_END.split(paragraph))
            for heading, paragraph in _paragraphs(page.read_text())]


def flags_named_for(command: str, flags: list[str], pages: list[Path]) -> set[str]:
    """The `flags` of `command` the `pages` name for it: in one clause of a paragraph (between
    table cells, `;` and `: `) with the command or with "every command", or in a section whose
    heading names the command."""
    names = _command_named(command)
    whole = [(f, re.compile(re.escape(f) + r"(?![\w-])")) for f in flags]
    named: set[str] = set()
    for page in pages:
        for heading, clauses in _clauses(page):
            under = names.search(heading) is not None  # the section's heading names it
            for clause in clauses:
                if under or "every command" in clause or names.search(clause):
                    named.update(f for f, flag in whole if f in clause and flag.search(clause))
    return named


def unnamed_flags(parser: argparse.ArgumentParser) -> list[str]:
    """`COMMAND --flag` for every flag of a command that no page names for that command."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    pages = [p for p in PAGES if p.name not in _NOT_FLAG_PAGES]
    out = []
    for name, command in sub.choices.items():
        flags = [f for action in command._actions for f in action.option_strings
                 if f.startswith("--") and f != "--help"]
        named = flags_named_for(name, flags, pages)
        out += [f"{name} {flag}" for flag in flags if flag not in named]
    return sorted(out)


def test_every_flag_of_every_command_is_named_for_that_command_in_the_readme_or_the_docs(
        ) -> None:
    """`copytrace --unit` was in its --help and in no page: a reader of the docs never met it.
    A flag is named for its command where a clause of a paragraph (between table cells, `;`
    and `: `) names both, as `` `report --log` ``, `gapwatch report FILE --since` or "`--log PATH` on `report`"
    do, or names the flag and "every command", or where the flag is in a section whose heading
    names the command; bad-input.md names flags commands refuse (`report --speed`), so not
    there. Any page naming the flag's text was enough: `fleet --seed` and `report --speed`,
    added and documented for neither, passed (the common flags named both)."""
    from gapwatch.cli import build_parser

    assert unnamed_flags(build_parser()) == []


def test_a_flag_named_only_for_other_commands_is_unnamed() -> None:
    from gapwatch.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["fleet"].add_argument("--seed")  # the simulator's, of demo, watch and record
    sub.choices["report"].add_argument("--speed")  # replay's, and refused by report
    assert set(unnamed_flags(parser)) - set(unnamed_flags(build_parser())) == {
        "fleet --seed", "report --speed"}
