"""Export the memory store as JSON Lines, and import such a file all-or-nothing.

One JSON object a line: `"kind"` and every column under its MemberJunction name, including columns
memctl does not model. Export is canonical and in ID order from one snapshot, so export -> import
into an empty store -> export reproduces the file byte for byte. Import validates every line before
touching the database, then checks and inserts everything in one write transaction; validated rows
are held in memory, so memory grows with the file.
"""

from __future__ import annotations

from memctl.transfer.export import export_records
from memctl.transfer.importing import import_records
from memctl.transfer.kinds import KINDS

__all__ = ["KINDS", "export_records", "import_records"]
