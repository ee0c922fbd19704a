"""What one log event may cost in memory: the text kept for display and evidence is cut.

Who calls it: `gapwatch.engine.session.Session` (every log event, before the store and the
detector see it; the recorder gets the line whole, up to `logs.max_line_bytes`), the offline
detection loop and the `--log` events' spool (`gapwatch.offline.gap_spool.EventSpool`, which
judges each event once, as it is spooled, for every report worker that reads it back), the
store (its log and prover-status buffers are bounded in bytes with `event_bytes` /
`status_bytes`), the evidence buffer (which keeps less still). Pure.

Why: memory must be bounded in bytes, not lines. A prover (or a fuzzer) can write 1 MiB lines;
kept whole, 5,000 of them in the log pane took `record --log -` from 33 MB to 5.2 GB. Nothing
that shows or explains a line needs more than a screen of it: the dashboard shows one line per
event, a gap's evidence 160 characters. The cut is marked in the text (`… [cut 1048064 chars]`)
and counted by the caller.
"""

from __future__ import annotations

from msgspec.structs import replace

from gapwatch.core.models import FieldValue, LogEvent, ProverStatus

#: Characters of a raw line kept for display (about a screen width, many times over).
RAW_CHARS = 4096
#: Characters of the event name, the job id and of each text field value.
TEXT_CHARS = 512
#: Fields kept per event (a tracing line has a dozen; more is junk or an attack).
MAX_FIELDS = 64
#: Rough cost of an event beyond its text (the object, its dict, small values).
EVENT_OVERHEAD_BYTES = 400


def cut_text(text: str, limit: int) -> str:
    """`text` if it is at most `limit` characters, else its start and how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut {len(text) - limit} chars]"


def _cut_field(value: FieldValue) -> FieldValue:
    return cut_text(value, TEXT_CHARS) if isinstance(value, str) else value


def bounded_event(ev: LogEvent) -> LogEvent:
    """`ev` itself when its text is within the limits above, else a copy with the text cut
    (same time, kind, ids and warning: only how much of the text is kept differs)."""
    fields = ev.fields
    too_many = len(fields) > MAX_FIELDS
    long_field = too_many
    if not too_many:
        # A plain loop, not any() over a generator: every log event of a report passes here
        # (a day's ~6 M, in each worker), and the generator cost twice the loop.
        for k, v in fields.items():
            if len(k) > TEXT_CHARS or (isinstance(v, str) and len(v) > TEXT_CHARS):
                long_field = True
                break
    job = ev.job_id
    if (len(ev.raw) <= RAW_CHARS and len(ev.name) <= TEXT_CHARS and not long_field
            and (job is None or len(job) <= TEXT_CHARS)):
        return ev
    if long_field:
        items = list(fields.items())[:MAX_FIELDS]
        fields = {cut_text(k, TEXT_CHARS): _cut_field(v) for k, v in items}
        if too_many:
            fields["_cut_fields"] = len(ev.fields) - MAX_FIELDS
    return replace(
        ev, raw=cut_text(ev.raw, RAW_CHARS), name=cut_text(ev.name, TEXT_CHARS),
        job_id=None if job is None else cut_text(job, TEXT_CHARS), fields=fields,
    )


def surely_bounded(ev: LogEvent, encoded_bytes: int) -> bool:
    """Whether `bounded_event(ev)` is `ev` itself, told from the size of its encoding
    (`encoded_bytes`, UTF-8 text) without looking at each field: no text is longer in
    characters than in bytes, so when the bytes less the raw line's length are at most
    `TEXT_CHARS`, so are its name, its job id and each field's key and value. False says only
    "look" (`bounded_event`); the spool of a report's `--log` events asks (the field loop
    was ~8 % of the parse)."""
    return (encoded_bytes - len(ev.raw) <= TEXT_CHARS and len(ev.raw) <= RAW_CHARS
            and len(ev.fields) <= MAX_FIELDS)


def event_bytes(ev: LogEvent) -> int:
    """About what `ev` costs in memory: its text (4 bytes a character, the worst case of a
    Python string) and a fixed overhead. For byte budgets, not accounting."""
    chars = len(ev.raw) + len(ev.name) + len(ev.job_id or "")
    for k, v in ev.fields.items():
        chars += len(k) + (len(v) if isinstance(v, str) else 8)
    return EVENT_OVERHEAD_BYTES + 4 * chars


def status_bytes(status: ProverStatus) -> int:
    """About what a prover status snapshot costs in memory: it lists every partition of the jobs
    in flight and every worker, and a prover may answer with thousands (its body may be 8 MiB).
    For byte budgets, not accounting."""
    return EVENT_OVERHEAD_BYTES + 300 * (len(status.partitions) + len(status.workers))
