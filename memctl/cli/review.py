"""`memctl review`: the contradictions flagged for review, and settling them."""

from __future__ import annotations

import json
from typing import Optional

import typer

from memctl import api
from memctl.cli.shell import AsJson, DryRun, Format, Quiet, _run, _state, app, guarded, out

review_app = typer.Typer(help="List contradictions flagged for review, and settle them.")
app.add_typer(review_app, name="review")


@review_app.callback(invoke_without_command=True)
@guarded
def review_list(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List flagged, unresolved contradictions: both texts, created dates, importance, access counts, reason.

    A pair is flagged when the authority rule cannot decide: created more than 7 days apart, the
    newer note wins; otherwise the higher ImportanceScore, where both notes have one; otherwise
    the higher AccessCount; otherwise a person decides here.
    """
    if ctx.invoked_subcommand is not None:
        return
    items = api.review_list(_state().settings())
    if as_json:
        out.print_json(json.dumps([item.to_dict() for item in items], default=str))
        return
    if not items:
        out.print("no contradictions awaiting review", markup=False)
        return
    for item in items:
        by_run = f" by run {item.run_id}" if item.run_id else ""
        out.print(f"pair {item.id}  flagged {item.created_at:%Y-%m-%d %H:%M} UTC{by_run}", markup=False)
        out.print(f"  reason: {item.reason}", markup=False)
        for label, note_id, note in (("A", item.note_a_id, item.note_a), ("B", item.note_b_id, item.note_b)):
            if note is None:
                out.print(f"  {label} {note_id}  (no longer exists)", markup=False)
                continue
            tags = [note.status] if note.status != "Active" else []
            tags += [note.protection_tier] if note.protection_tier != "Standard" else []
            tags += [] if note.is_auto_generated else ["manual"]
            shown = f"  [{', '.join(tags)}]" if tags else ""
            importance = f"  importance {note.importance_score:g}" if note.importance_score is not None else ""
            out.print(f"  {label} {note.id}  created {note.created_at:%Y-%m-%d}{importance}  accessed {note.access_count}x  {note.type}{shown}", markup=False)
            out.print(f"    {note.text}", markup=False)
        out.print(f"  settle: memctl review resolve {item.id} --keep A   |   --keep B   |   --dismiss (keep both)\n", markup=False)
    out.print(f"{len(items)} pair(s) awaiting review", markup=False)
    out.print("(the rule that could not decide: newer by more than 7 days, else higher ImportanceScore where both have one, else higher AccessCount)", markup=False)


@review_app.command("resolve")
@guarded
def review_resolve(
    pair_id: str = typer.Argument(..., help="The flagged pair (see `memctl review`).", metavar="PAIR_ID"),
    keep: Optional[str] = typer.Option(None, "--keep", help="The note to keep: A or B (the pair's first or second note, as `memctl review` lists them) or its ID; the other one is revoked into it.", metavar="A|B|NOTE_ID"),
    dismiss: bool = typer.Option(False, "--dismiss", help="Keep both notes and close the flag."),
    dry_run: DryRun = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    fmt: Format = "text",
) -> None:
    """Settle a flagged pair: keep one note (the other is revoked) or dismiss the flag (recorded; undoable)."""
    _run(_state(), as_json, quiet, lambda s, r: api.review_resolve(s, pair_id, keep=keep, dismiss=dismiss, dry_run=dry_run, reporter=r), fmt=fmt)
