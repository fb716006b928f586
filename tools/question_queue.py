"""Questions sent in a conversation, answered one after another off the page's own thread, so none is lost.

Streamlit stops a page's run when the same tab sends something new; a question answered inside that run was
dropped with it (not shown, not saved) while its model work went on. Here a sent question becomes a `Job` at
once: a thread of its conversation answers its jobs in the order sent (each follow-up condensed over the turns
saved before it), saves each turn, and any run of the page shows the jobs not yet saved and waits on them. A
job still waiting can be cancelled; it is saved as a cancelled turn. Hand-written: Streamlit has no job queue
that outlives a run, and a task queue (Celery, RQ) would need a broker process for what one thread does here.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import Enum

from engines.trace import Trace
from tools.chat import Chat

log = logging.getLogger(__name__)


class JobState(str, Enum):
    WAITING = "waiting"  # behind an earlier question of its conversation, or another tab's on the one model
    ANSWERING = "answering"
    DONE = "done"  # answered (and saved, when the store works)
    FAILED = "failed"  # refused or broke: `error` says why; nothing saved
    CANCELLED = "cancelled"  # cancelled by the person while waiting; saved as a cancelled turn in its place


@dataclass
class Job:
    """One sent question; it is also the answer's listener, keeping what the model has written so far."""

    question: str
    conversation_id: str
    state: JobState = JobState.WAITING
    text: str = ""  # the answer so far, as streamed
    ran: tuple[str, list[str], list[tuple]] | None = None  # the SQL path's query, columns and rows, once run
    trace: Trace | None = None
    error: str | None = None
    finished: threading.Event = field(default_factory=threading.Event)  # answered, failed, or saved as cancelled

    def begin(self) -> None:
        self.text = ""

    def token(self, delta: str) -> None:
        self.text += delta

    def withdraw(self, message: str) -> None:
        self.text = message

    def rows(self, sql: str, columns: list[str], rows: list[tuple]) -> None:
        self.ran = (sql, columns, rows)


class QuestionQueue:
    """The jobs of every conversation in this process, one thread per conversation with jobs to do. `model_lock`
    is held while a job is answered: the local model answers one question at a time, across tabs and conversations."""

    def __init__(self, model_lock: AbstractContextManager) -> None:
        self.model_lock = model_lock
        self._jobs: dict[str, list[Job]] = {}
        self._working: set[str] = set()  # conversations whose thread is running
        self._guard = threading.Lock()

    def submit(self, chat: Chat, conversation_id: str, question: str, user_errors: tuple[type[Exception], ...] = ()) -> Job:
        """Queue `question` in `conversation_id`; it is answered after the conversation's earlier questions."""
        job = Job(question, conversation_id)
        with self._guard:
            self._jobs.setdefault(conversation_id, []).append(job)
            start = conversation_id not in self._working
            self._working.add(conversation_id)
        if start:
            threading.Thread(target=self._work, args=(chat, conversation_id, user_errors), daemon=True, name=f"answers-{conversation_id}").start()
        return job

    def unsaved(self, conversation_id: str | None, saved_turns: int) -> list[Job]:
        """The conversation's jobs a page must show besides the `saved_turns` turns it read from the store: those
        not finished, and those finished since (a failed one once, so its error is seen)."""
        if conversation_id is None:
            return []
        with self._guard:
            jobs = self._jobs.get(conversation_id, [])
            shown = [j for j in jobs if not j.finished.is_set() or not _saved_by(j, saved_turns)]
            kept = [j for j in shown if not (j.finished.is_set() and j.state is JobState.FAILED)]
            self._jobs[conversation_id] = kept
            return shown

    def cancel(self, job: Job) -> bool:
        """Cancel a job still waiting; it is saved as cancelled when its turn comes. False once it is being answered."""
        with self._guard:
            if job.state is not JobState.WAITING:
                return False
            job.state = JobState.CANCELLED
            return True

    def _next(self, conversation_id: str) -> Job | None:
        """The conversation's first unfinished job; None (and this conversation's thread ends) when there is none."""
        with self._guard:
            job = next((j for j in self._jobs.get(conversation_id, []) if not j.finished.is_set()), None)
            if job is None:
                self._working.discard(conversation_id)
            return job

    def _work(self, chat: Chat, conversation_id: str, user_errors: tuple[type[Exception], ...]) -> None:
        while (job := self._next(conversation_id)) is not None:
            if job.state is JobState.WAITING:
                with self.model_lock:
                    with self._guard:
                        started = job.state is JobState.WAITING  # not cancelled while this thread waited for the model
                        if started:
                            job.state = JobState.ANSWERING
                    if started:
                        self._answer(chat, job, user_errors)
            if job.state is JobState.CANCELLED:
                job.trace = chat.save_cancelled(job.question, job.conversation_id)
                job.finished.set()

    @staticmethod
    def _answer(chat: Chat, job: Job, user_errors: tuple[type[Exception], ...]) -> None:
        try:
            job.trace = chat.ask(job.question, job.conversation_id, listener=job)
            job.state = JobState.DONE
        except user_errors as err:
            job.error, job.state = str(err), JobState.FAILED
        except Exception as err:  # a broken answer must end its job, or every later question would wait forever
            log.exception("answering %r failed", job.question)
            job.error, job.state = f"The question could not be answered: {err}", JobState.FAILED
        finally:
            job.finished.set()


def _saved_by(job: Job, saved_turns: int) -> bool:
    """Whether the store, when it held `saved_turns` turns, already held this job's turn."""
    conversation = job.trace.conversation if job.trace else None
    return conversation is not None and conversation.turn <= saved_turns
