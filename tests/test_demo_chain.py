"""The demo's whole chain within 60 s of simulated time, headless: BREAKDOWN, the memory behind
the copies, the cuzk setting (a `[section] key`) and its payoff. The simulated cuzk takes
upstream's paths (curio e0294b0f): `pageable` reaches pageable a/b/c through the pinned pool's
checkout FAILED lines after an unpinned first wave; `batched` runs `[scheduler] max_batch_size
= 2`, monolithic and unpinned."""

from __future__ import annotations

import re
from pathlib import Path

from sim_recordings import ran_to_end
from ui_fakes import screen_text

from gapwatch.cli import main
from gapwatch.commands.demo import demo_config
from gapwatch.config import Config, build_config
from gapwatch.cuzk.advice import advise
from gapwatch.cuzk.prover import view_of
from gapwatch.engine.runtime import build_runtime
from gapwatch.offline.report import ReportData, build_report

SECTION_KEY = re.compile(r"^\[[a-z_]+\] [a-z_]+$")


def _record(scenario: str, tmp: Path, seconds: int = 60, extra: list[str] | None = None
            ) -> ReportData:
    out = tmp / f"{scenario}-{len(list(tmp.glob('*.jsonl')))}.jsonl"
    assert main(["record", "--source", f"sim:{scenario}", "--speed", "0", "--duration",
                 str(seconds), "--quiet", "--out", str(out), *(extra or [])]) == 0
    return build_report(out, Config())


def test_the_pageable_demo_shows_the_whole_chain_within_60_s(tmp_path: Path) -> None:
    r = _record("pageable", tmp_path)
    assert r.breakdowns, "the pageable pipeline breaks down within 60 s"
    starved = [g for g in r.gaps if g.kind == "pcie_starved"]
    assert starved and all(g.copies.memory_kind == "pageable" for g in starved)
    settings = [a for a in r.advice.advice if SECTION_KEY.match(a.setting)]
    assert settings and settings[0].setting == "[memory] safety_margin"
    assert any("checkout(s) FAILED" in e for e in settings[0].evidence)
    assert settings[0].payoff and (settings[0].payoff.throughput_gain or 0) > 1.2


def test_the_first_wave_is_unpinned_then_the_checkouts_fail(tmp_path: Path) -> None:
    from evaluation.simulate import simulate

    lines = [t for _, t in simulate("pageable", seed=1, duration_s=20).log_lines]
    first_fail = next(i for i, t in enumerate(lines) if "checkout FAILED" in t)
    hint = next(i for i, t in enumerate(lines) if "cached synthesis capacity hint" in t)
    no_hint = [i for i, t in enumerate(lines) if "no capacity hint cached" in t]
    assert no_hint and max(no_hint) < hint < first_fail


def test_the_batched_scenario_is_told_max_batch_size_1(tmp_path: Path) -> None:
    r = _record("batched", tmp_path)
    (a, *_) = r.advice.advice
    assert a.setting == "[scheduler] max_batch_size" and a.change.startswith("1")
    assert any("max_batch_size=2" in e for e in a.evidence)


def test_the_live_advice_names_the_setting_within_60_s() -> None:
    """What the dashboard's help screen and summary.md say (`advise` over the live store)."""
    for scenario, setting in (("pageable", "[memory] safety_margin"),
                              ("batched", "[scheduler] max_batch_size")):
        rt = ran_to_end(build_config({}), f"sim:{scenario}", 60)
        snap = rt.store.snapshot()
        closed = [g for g in snap.gaps if not g.is_open]
        advice = advise(closed, view_of(snap.pipeline)).advice
        assert advice and advice[0].setting == setting, (scenario, advice)


async def test_the_demo_dashboards_flag_names_the_setting_and_its_payoff(tmp_path: Path) -> None:
    """The demo's headline (issue 26): the BREAKDOWN line itself says what to change and what
    it pays, beside the memory behind the copies, within 60 s of simulated time."""
    from gapwatch.ui.app import GapwatchApp
    from gapwatch.ui.widgets.gpu_header import GpuHeader

    config = demo_config(build_config({"snapshot": {"dir": str(tmp_path), "auto": False}}))
    rt = build_runtime(config, "sim:pageable", speed=0, duration_s=60)
    app = GapwatchApp(rt)
    async with app.run_test(size=(120, 36)) as pilot:
        rt.start()
        assert rt.done.wait(60)
        app.redraw()
        await pilot.pause()
        # The header's lines as one text (wrapped lines rejoined at single spaces).
        head = re.sub(r"\s+", " ", " ".join(str(line) for line in app.query_one(GpuHeader).lines))
        # The hint in full is `d`'s: the header gives it the room its other lines leave (none
        # once the SOURCE ENDED banner takes a line: then it says `d: the hint`).
        await pilot.press("d")
        await pilot.pause()
        whole = re.sub(r"\s+", " ", screen_text(app))
    rt.stop()
    assert "GPU0 BREAKDOWN" in head and "gaps (slow copies)" in head
    # The way the advice moves it (its row says "raise it"), not "change [memory] ...".
    assert re.search(r"; raise \[memory\] safety_margin \(or lower total_budget if not auto\)"
                     r"; payoff ~\d\.\d\dx", head), head
    # Its span and count only where the verdict's own words do not say them already.
    said = re.search(r"(\d+) gaps \(slow copies\).* in the last (\d+) s", head)
    assert said is not None, head
    assert f"over the last {said[2]} s" not in head.split("; payoff", 1)[1], head
    # The simulated copy trace names the memory of the copies, measured, not inferred.
    assert re.search(r"\d+ with copies from pageable memory \(copy trace\)", head), head
    assert re.search(r"GiB copied from pageable host memory during the gap at \d", whole), whole


def test_the_demo_records_its_copies_as_the_copy_trace_would_unless_told_not_to(
        tmp_path: Path) -> None:
    assert demo_config(Config()).sim.copy_trace == "on"
    assert demo_config(build_config({"sim": {"copy_trace": "off"}})).sim.copy_trace == "off"
    plain = _record("pageable", tmp_path, seconds=30)
    assert plain.copies is None  # `record --source sim` writes none unless asked
    config = tmp_path / "c.toml"
    config.write_text('[sim]\ncopy_trace = "on"\ncopies_per_partition = 4\n')
    traced = _record("pageable", tmp_path, seconds=30, extra=["--config", str(config)])
    assert traced.copies is not None and traced.copies.count % 4 == 0
    starved = [g for g in traced.gaps if g.kind == "pcie_starved"]
    assert starved and all(g.copies.traced and g.copies.memory_kind == "pageable"
                           for g in starved)
