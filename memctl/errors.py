"""memctl's error hierarchy: every subclass carries the exit code the CLI maps it to.

Exit codes: 0 done (a gate or lock skip included), 1 a phase failed, `verify` found a breach, the
run reached its deadline or the lock is held past its deadline, 2 usage or configuration error,
3 unexpected error; 130 / 143 when SIGINT / SIGTERM stopped the run (`memctl.stopping`).
"""

from __future__ import annotations


class MemctlError(Exception):
    """Base of every error memctl raises on purpose."""

    exit_code = 3


class UsageError(MemctlError):
    """Bad input from the operator: a flag, a config key, an import line, a plan file."""

    exit_code = 2


class ConfigError(UsageError):
    """A setting is missing, unknown or malformed."""


class DatabaseError(UsageError):
    """The database is unreachable, refuses the credentials, or is not at the expected schema."""


class SchemaBehindError(DatabaseError):
    """The database is not at the migration head and memctl may not upgrade it itself."""


class InputError(UsageError):
    """A file memctl was asked to read (import, plan) is malformed; nothing was written."""


class FailedError(MemctlError):
    """A run finished but something in it failed (a phase, an invariant)."""

    exit_code = 1
