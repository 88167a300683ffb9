"""Export the memory store as JSON Lines, and import such a file all-or-nothing.

One JSON object a line: `"kind"` (company, user, conversation, agent, note_type, note, example, run,
run_step) and every column under its MemberJunction name. Export streams each table in ID order
inside one snapshot, so the file is deterministic and its references are consistent; values are
canonical (lowercase UUIDs, UTC timestamps with microseconds, decimals as numbers), so
export -> import into an empty store -> export reproduces the file byte for byte.

Import works in two steps. First every line is parsed and validated without touching the database
(the first bad line raises `InputError("line N: Field: what is wrong")`). Then one write
transaction checks what needs the store (IDs already present, foreign-key targets) and inserts
every row in foreign-key-safe order with executemany batches; checking inside the write
transaction means no concurrent writer can slip a conflicting row in between. Validated rows are
held in memory (as tuples) between the two steps, so memory grows with the size of the file.

Column rules come from `memctl.store.models` (types, lengths, nullability, server defaults), plus
the value lists and JSON-text columns of DESIGN.md section 2, so a new column cannot slip through
unvalidated: an unknown column type fails at import time of this module.

Columns memctl does not model (a MemberJunction database's AuthorType, EmbeddingVectorBinary,
Company.Description, most of AIAgent's and AIAgentRun's...) are carried too: export reflects each
table and writes every column it has, the modelled ones first, then the others in the table's
order, encoded by their reflected type (binary as base64, as MJ's API shows it). Import checks
such a column against the target's table: one it lacks stops the import naming it (unless told
to drop unknown columns), a missing NOT NULL one without a default is an error, and an omitted
one takes the database's default.
"""

from __future__ import annotations

from memctl.transfer.export import export_records
from memctl.transfer.importing import import_records
from memctl.transfer.kinds import KINDS

__all__ = ["KINDS", "export_records", "import_records"]
