"""Write AIAgentRun / AIAgentRunStep records, each in its own short transaction.

A step is committed when it starts and again when it ends, so a phase that crashes still leaves
its Running or Failed step behind for `memctl runs show` and for the next run's lease takeover.
A phase's child steps (one per cluster or pair) are written together once its units are applied.
A dry-run uses `NullRecorder`: it records nothing.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Optional, Protocol, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memctl.agent import ensure_agent
from memctl.store import models as m
from memctl.store.engine import write

Clock = Callable[[], datetime]


def to_json(data: Any) -> Optional[str]:
    """Serialise step/run data as compact, stable JSON (None stays None)."""
    if data is None:
        return None
    return json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))


class Recorder(Protocol):
    """What the pipeline needs from a run recorder."""

    run_id: Optional[str]

    def start_step(self, name: str, step_type: str = "Decision", input_data: Any = None, parent_id: Optional[str] = None) -> Optional[str]: ...

    def finish_step(self, step_id: Optional[str], *, success: bool, output_data: Any = None, error: Optional[str] = None, input_data: Any = None) -> None: ...

    def record_steps(self, steps: Sequence[FinishedStep], parent_id: Optional[str] = None) -> None: ...

    def finish_run(self, *, success: bool, message: str, result: Any = None, error: Optional[str] = None, status: Optional[str] = None) -> None: ...


@dataclass(frozen=True)
class FinishedStep:
    """A step whose work is already over (a phase's per-cluster or per-pair child step)."""

    name: str
    step_type: str
    input_data: Any
    output_data: Any
    success: bool
    error: Optional[str] = None


class NullRecorder(Recorder):
    """Records nothing (dry-run): the protocol's methods do nothing."""

    run_id: Optional[str] = None


def ensure_memctl_agent(conn: sa.Connection, now: datetime) -> None:
    """Create the AIAgent row that owns memctl's runs, when it is missing (see `memctl.agent`)."""
    ensure_agent(conn, m.MEMCTL_AGENT_ID, now)


class RunRecorder:
    """Records one AIAgentRun and its steps."""

    def __init__(self, engine: Engine, clock: Clock, run_name: str, run_id: Optional[str] = None, agent_id: str = m.MEMCTL_AGENT_ID) -> None:
        self.engine = engine
        self.agent_id = agent_id
        self.clock = clock
        self.run_name = run_name
        self.run_id: Optional[str] = run_id or str(uuid.uuid4())
        self._step_number = 0
        self._mutex = threading.Lock()

    def start_run(self, message: Optional[str] = None) -> str:
        """Insert the run row (Status Running) and return its ID."""
        now = self.clock()
        with write(self.engine) as conn:
            ensure_agent(conn, self.agent_id, now)
            conn.execute(
                m.run.insert().values(
                    ID=self.run_id, AgentID=self.agent_id, RunName=self.run_name, Status="Running",
                    StartedAt=now, Message=message, __mj_CreatedAt=now, __mj_UpdatedAt=now,
                )
            )
        assert self.run_id is not None
        return self.run_id

    def start_step(self, name: str, step_type: str = "Decision", input_data: Any = None, parent_id: Optional[str] = None) -> str:
        with self._mutex:
            self._step_number += 1
            number = self._step_number
        step_id = str(uuid.uuid4())
        now = self.clock()
        with write(self.engine) as conn:
            conn.execute(
                m.run_step.insert().values(
                    ID=step_id, AgentRunID=self.run_id, ParentID=parent_id, StepNumber=number, StepType=step_type,
                    StepName=name, Status="Running", StartedAt=now, InputData=to_json(input_data),
                    __mj_CreatedAt=now, __mj_UpdatedAt=now,
                )
            )
        return step_id

    def finish_step(self, step_id: Optional[str], *, success: bool, output_data: Any = None, error: Optional[str] = None, input_data: Any = None) -> None:
        """Close a step; `input_data`, when given, replaces what the step started with."""
        if step_id is None:
            return
        now = self.clock()
        values = {
            "Status": "Completed" if success else "Failed", "Success": success, "CompletedAt": now,
            "OutputData": to_json(output_data), "ErrorMessage": error, "__mj_UpdatedAt": now,
        }
        if input_data is not None:
            values["InputData"] = to_json(input_data)
        with write(self.engine) as conn:
            conn.execute(m.run_step.update().where(m.run_step.c.ID == step_id).values(**values))

    def record_steps(self, steps: Sequence[FinishedStep], parent_id: Optional[str] = None) -> None:
        """Write steps that are already over in one transaction (one statement), numbered in order."""
        if not steps:
            return
        with self._mutex:
            first = self._step_number + 1
            self._step_number += len(steps)
        rows = _finished_step_rows(self.run_id, steps, parent_id, first, self.clock())
        with write(self.engine) as conn:
            conn.execute(m.run_step.insert(), rows)

    def record_finished_run(self, message: str, result: Any, steps: Sequence[FinishedStep], success: bool = True) -> str:
        """Write a run that is already over (a gate skip, a stuck lock) and its steps in one transaction,
        so a process killed meanwhile leaves no Running run that no lease would let the next run close."""
        now = self.clock()
        run_values = {
            "ID": self.run_id, "AgentID": self.agent_id, "RunName": self.run_name, "Status": "Completed" if success else "Failed",
            "StartedAt": now, "CompletedAt": now, "Success": success, "Message": message, "ErrorMessage": None if success else message,
            "Result": to_json(result), "__mj_CreatedAt": now, "__mj_UpdatedAt": now,
        }
        with write(self.engine) as conn:
            ensure_agent(conn, self.agent_id, now)
            conn.execute(m.run.insert().values(**run_values))
            conn.execute(m.run_step.insert(), _finished_step_rows(self.run_id, steps, None, 1, now))
        assert self.run_id is not None
        return self.run_id

    def finish_run(self, *, success: bool, message: str, result: Any = None, error: Optional[str] = None, status: Optional[str] = None) -> None:
        now = self.clock()
        with write(self.engine) as conn:
            conn.execute(
                m.run.update()
                .where(m.run.c.ID == self.run_id)
                .values(
                    Status=status or ("Completed" if success else "Failed"), Success=success, CompletedAt=now,
                    Message=message, Result=to_json(result), ErrorMessage=error, __mj_UpdatedAt=now,
                )
            )


def _finished_step_rows(run_id: Optional[str], steps: Sequence[FinishedStep], parent_id: Optional[str], first: int, now: datetime) -> list[dict[str, Any]]:
    return [
        {
            "ID": str(uuid.uuid4()), "AgentRunID": run_id, "ParentID": parent_id, "StepNumber": number,
            "StepType": step.step_type, "StepName": step.name, "Status": "Completed" if step.success else "Failed",
            "Success": step.success, "StartedAt": now, "CompletedAt": now, "InputData": to_json(step.input_data),
            "OutputData": to_json(step.output_data), "ErrorMessage": step.error, "__mj_CreatedAt": now, "__mj_UpdatedAt": now,
        }
        for number, step in enumerate(steps, start=first)
    ]


def close_dead_run(conn: sa.Connection, run_id: str, now: datetime, why: str) -> int:
    """Mark a run that died while Running (and its open steps) as Failed; return rows changed."""
    changed = conn.execute(
        m.run.update()
        .where(m.run.c.ID == run_id, m.run.c.Status == "Running")
        .values(Status="Failed", Success=False, CompletedAt=now, ErrorMessage=why, __mj_UpdatedAt=now)
    ).rowcount
    conn.execute(
        m.run_step.update()
        .where(m.run_step.c.AgentRunID == run_id, m.run_step.c.Status == "Running")
        .values(Status="Failed", Success=False, CompletedAt=now, ErrorMessage=why, __mj_UpdatedAt=now)
    )
    return changed
