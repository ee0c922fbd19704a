"""What to change for the PoSt that failed, were lost, late or at risk: one line a cause, said
first in the report's "What to change" section (and its `--json`, summary.md and the dashboard's
help), before any gap's advice. A late or failed WinningPoSt loses a block, a WindowPoSt not
proved within its deadline faults its partition's sectors: the operator's first question, and
the section said "nothing to change: no gap" beside five failed ones.

Who calls it: `gapwatch.cuzk.advice.with_proofs`, the one rule every "What to change" goes
through (the report over every proof of the run, `ProverEvents.troubles`; summary.md and the
help screen over the events the session holds, `session_advice`); `gapwatch.cuzk.advice` says
the lines (`AdviceReport.proofs`). Pure. The proofs come grouped by
`gapwatch.core.prover_watch.ProofTroubles` (kind, how it went wrong, its typed cause
`ProofTiming.cause`: a failed one's failure line, never its error's text); the words are
cuzk's, from upstream (curio e0294b0f; ../shared/reference/cuzk-upstream-paths.md 4.2, 4.3,
4.5), with what a missed PoSt of its kind costs (`_MISSED`, docs/post.md):

- failed: how many, cuzk's error (the first; said so where they differ), and what upstream says
  of the line that said it (`_FAILED`, by its message); no cuzk setting makes a failed proof
  succeed, and that is said;
- lost in a restart: in flight when cuzk started again; no setting: restart cuzk only when
  needed, well before a proving window;
- late or at risk: how many, the longest against its deadline, and the setting its longest phase
  names (`gapwatch.cuzk.post._with_setting`, the latest such proof's words, with its own
  figures), or "no cuzk setting" where the words say none (`none: ...`), or, where no phase's
  setting is claimed, which phase was longest; where no phase ranks first (`PHASES_NOT_READ`:
  the phases not read took longer than any read), that its cause is not known from the log
  read, and what reads it;
- past the causes kept apart (`MAX_TROUBLES`), one line a kind and verdict that says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gapwatch.core import fmt
from gapwatch.core.models import PHASE_WORDS, ProofTiming
from gapwatch.core.prover_watch import MAX_TROUBLES, Trouble
from gapwatch.cuzk.post import PHASES_NOT_READ, POST_NAMES

#: The setting each late cause names (`ProofTiming.cause`, set by `gapwatch.cuzk.post`).
CAUSE_SETTINGS: dict[str, str] = {
    "srs_evicted": "[memory] eviction_min_idle",
    "synthesis_queue": "[pipeline] synthesis_concurrency",
    "pipeline_off": "[pipeline] enabled",
}
#: How a PoSt went wrong, in the order troubles are said in (a proof that never came first):
#: the one home of these words (the PoSt advice metric's `verdict` label and the fleet's
#: query and its rows read them here).
VERDICTS: tuple[str, ...] = ("failed", "lost", "late", "at_risk")
#: Those of a PoSt that missed (no proof in time: a block lost, sectors faulted), not merely
#: at risk: what the fleet counts and ranks a box for.
MISSED_VERDICTS: tuple[str, ...] = VERDICTS[:3]
_ORDER = {verdict: i for i, verdict in enumerate(VERDICTS)}
_PANIC = ("a panic in cuzk's task: supraseal-c2 turns every CUDA error into one (src/lib.rs:155, "
          "316, 331, 383), and the panic's own text beside cuzk's line in the Errors list says "
          "which; a CUDA out of memory may be sppark 0.1.14's GPU memory leak "
          "(filecoin-project/lotus#13634, fixed in sppark v0.1.15): watch the process's GPU "
          "memory over days")
#: What upstream says of each failure line a PoSt fails by (its message -> (source, words)).
_FAILED: dict[str, tuple[str, str]] = {
    "GPU prove start failed": (
        "engine.rs:3282",
        "cuzk's gpu_prove_start (pipeline.rs:1380-1405) returns an error only where "
        "bellperson's prove_start does, with no SupraSeal SRS (MalformedSrs, "
        "extern/bellperson/src/groth16/prover/supraseal.rs:199-202), which the "
        "SuprasealParameters cuzk passes always has (supraseal_params.rs:70-72): curio "
        "e0294b0f does not write this line, so this cuzk is another build: report it upstream "
        "(curio) with the log; a CUDA error there is a panic instead ('GPU prove start task "
        "panicked', engine.rs:3302)"),
    "GPU prove start task panicked": ("engine.rs:3302", _PANIC),
    "GPU proving task panicked": ("engine.rs:998", _PANIC),
    "proof task panicked": ("engine.rs:3475", _PANIC),
    "synthesis task panicked": ("engine.rs:2870", _PANIC),
    "GPU proving failed": (
        "engine.rs:977",
        "its GPU proof's finish (gpu_prove_finish, the b_g2 MSM and the proof's assembly) "
        "returned the error after its GPU start; cuzk's words are all the log says of it"),
    "synthesis failed": (
        "engine.rs:2855",
        "its synthesis returned the error (synthesize_winning_post / synthesize_window_post, "
        "pipeline.rs:2900, 3091, from its request's vanilla proofs): the error names what "
        "failed, on Curio's side of the request (its sectors' vanilla proofs) more often than "
        "cuzk's"),
    "proof failed": (
        "engine.rs:3471",
        "cuzk's monolithic prove (the pipeline off) returned the error; cuzk's words are all "
        "the log says of it"),
}


@dataclass(frozen=True, slots=True)
class ProofAdvice:
    """One cause's line: its proofs, and the setting it names (None: no cuzk setting)."""

    proof_kind: str
    #: "failed", "lost", "late", "at_risk".
    verdict: str
    count: int
    cause: str | None
    error: str | None
    setting: str | None
    words: str
    #: Of a failed cause's proofs: another's error said other words than `error`
    #: (`errors_differ`), or they differ from it only in their numbers (`numbers_differ`: a
    #: sector, tokio's task id; never both: other words are said first). What `words` says
    #: after the first error, for a reader of the JSON (it said so in the text alone).
    errors_differ: bool = False
    numbers_differ: bool = False

    def json(self) -> dict[str, Any]:
        return {"proof_kind": self.proof_kind, "verdict": self.verdict, "count": self.count,
                "cause": self.cause, "error": self.error, "setting": self.setting,
                "words": self.words, "errors_differ": self.errors_differ,
                "numbers_differ": self.numbers_differ}


def proof_advice(troubles: list[Trouble]) -> list[ProofAdvice]:
    """A line a trouble, failed first, then lost, late, at risk; more proofs first."""
    ordered = sorted(troubles, key=lambda t: (_ORDER.get(t.key.verdict, 9), -t.count))
    return [_advice(t) for t in ordered]


#: What a PoSt of each kind costs when no proof of it comes in time, failed or lost
#: (docs/post.md): a WinningPoSt must be done within its epoch (cuzk's proving.proto:45), and
#: a WindowPoSt's partition (its job id names it, lib/ffi/cuzk_funcs.go:179) not proved within
#: its deadline has its sectors faulted (Filecoin's WindowPoSt).
_MISSED: dict[str, str] = {
    "winning-post": "a WinningPoSt's block lost",
    "window-post": "a WindowPoSt not proved within its deadline faults its partition's sectors",
}


def _missed(kind: str, failed: bool) -> str:
    """What a missed PoSt of `kind` costs ("" for a kind with no words here)."""
    words = _MISSED.get(kind, "")
    if words and failed and kind == "winning-post":
        return words + " as a late one's"
    return words


def _advice(t: Trouble) -> ProofAdvice:
    k = t.key
    name = POST_NAMES.get(k.proof_kind, k.proof_kind)
    failed = k.verdict == "failed" and not k.others
    differ, numbers = _errors_said(t) if failed else (False, False)
    if k.others:
        words, setting = _others_words(t, name), None
    elif failed:
        words, setting = _failed_words(t, name, differ, numbers), None
    elif k.verdict == "lost":
        missed = _missed(k.proof_kind, failed=False)
        words, setting = (
            f"{t.count} {name} lost in a restart of cuzk (in flight when it started again: "
            f"Curio waits for it until its ProveTimeout{', ' + missed if missed else ''}): no "
            "cuzk setting: restart cuzk only when needed, well before a proving window (the "
            "Restarts list says how each came)"), None
    else:
        words, setting = _late_words(t, name)
    return ProofAdvice(k.proof_kind, k.verdict, t.count, k.cause, t.first_error, setting,
                       fmt.visible(words), differ, numbers)


def _errors_said(t: Trouble) -> tuple[bool, bool]:
    """Whether a failed cause's errors differ in words, or only in their numbers: the one rule
    the text (`_failed_words`) and the JSON (`ProofAdvice.numbers_differ`) read."""
    return t.errors_differ, t.numbers_differ and not t.errors_differ


def _others_words(t: Trouble, name: str) -> str:
    """The proofs of a kind and verdict whose causes came past those kept apart: counted, their
    causes not said (each proof's row says its own)."""
    how = {"at_risk": "at risk"}.get(t.key.verdict, t.key.verdict)
    return (f"{t.count} more {name} {how}, by causes past the {MAX_TROUBLES} gapwatch keeps "
            "apart: their causes not kept here (each proof's row in the PoSt table, and "
            "--json, says its own)")


def _failed_words(t: Trouble, name: str, errors_differ: bool, numbers_differ: bool) -> str:
    k = t.key
    first = (f" (the first of {t.count}, whose errors differ: each proof's row says its own)"
             if errors_differ else
             f" (the first of {t.count}; the others differ only in their numbers)"
             if numbers_differ else "")
    said = (f"cuzk said '{t.first_error}'{first}" if t.first_error
            else "cuzk said it failed (its error not kept)")
    source, upstream = _FAILED.get(k.cause or "", (
        "", "no upstream words for this failure line; cuzk's error is what the log says"))
    where = f" ({source})" if source else ""
    missed = _missed(k.proof_kind, failed=True)
    came = f"no proof came of it: {missed}" if missed else "no proof came of it"
    return f"{t.count} {name} failed ({came}): {said}{where}: no cuzk setting: {upstream}"


def _late_words(t: Trouble, name: str) -> tuple[str, str | None]:
    k, p = t.key, t.latest
    how = "late" if k.verdict == "late" else "at risk"
    deadline = f" of its {p.deadline_s:g} s deadline" if p.deadline_s is not None else ""
    longest = f", the longest {t.longest_s:.1f} s{deadline}" if t.longest_s is not None else ""
    head = f"{t.count} {name} {how}{longest}: "
    latest = " (the latest's words)" if t.count > 1 else ""
    setting = CAUSE_SETTINGS.get(k.cause or "")
    if k.cause == PHASES_NOT_READ:
        return head + _not_read_words(p, latest), None
    words = p.setting
    if words is None:
        phase = k.cause or "not known"
        return (head + f"no setting claimed: its longest phase was {phase}, which no cuzk "
                "setting is known to shorten (docs/post.md)"), None
    for none in ("none in cuzk: ", "none: "):
        if words.startswith(none):
            return head + f"no cuzk setting{latest}: " + words[len(none):], None
    return head + f"setting{latest}: " + words, setting


def _not_read_words(p: ProofTiming, latest: str) -> str:
    """Why no phase is named: those not read took longer than any read, or, its begin not
    read, may have (`ProofTiming.longest_phase`)."""
    unread, rest_s = p.unread()
    names = fmt.and_list([PHASE_WORDS[phase] for phase in unread])
    if rest_s is not None and p.total_s is not None:
        how_long = (f"{rest_s:.1f} s of its {p.total_s:.1f} s, longer than any phase read")
    else:
        how_long = "its begin not read, so how long they took is not known"
    return (f"its cause not known from the log read{latest}: its {names} not read ({how_long}), "
            "so no phase, nor a setting, is named; a log read from before it began (--since "
            "earlier, for a window) says them")


def proof_advice_lines(proofs: list[ProofAdvice], indent: str = "  ") -> list[str]:
    """The lines, one a cause (`gapwatch.cuzk.advice.advice_lines` says them first)."""
    return [f"{indent}PoSt: {a.words}" for a in proofs]
