"""The process table, read from Linux's ``/proc``, for the tests that kill a sweep."""

from __future__ import annotations

from pathlib import Path


def _fields(path: Path) -> list[str]:
    """The fields of a ``stat`` file after the command name (state, ppid, pgrp, session, …)."""
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def alive(pid: int) -> bool:
    """Whether any thread of ``pid`` lives. A process in exit shows its main thread as a zombie
    while its other threads still run down, holding its files (and their locks) until the last
    one ends."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    return any((state := _fields(task / "stat")[:1]) and state[0] not in ("Z", "X")
               for task in tasks)


def _table() -> dict[int, list[str]]:
    return {int(p.name): f for p in Path("/proc").iterdir()
            if p.name.isdigit() and (f := _fields(p / "stat"))}


def descendants(pid: int) -> set[int]:
    """Every descendant process of ``pid``."""
    parents = {p: int(f[1]) for p, f in _table().items()}
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def session(sid: int) -> list[int]:
    """The live processes of session ``sid`` (a process started with ``start_new_session`` and
    everything it started that stayed in its session, re-parented or not)."""
    return [p for p, f in _table().items() if len(f) > 3 and f[3] == str(sid) and alive(p)]


def as_at_a_terminal() -> None:
    """``preexec_fn`` of a command a test interrupts: its Ctrl-C as a terminal gives it (SIGINT's
    default action, not blocked). A test worker may pass on another (a library it ran blocks or
    ignores SIGINT in a thread while it starts a helper process), and a new interpreter then
    never sees the test's SIGINT: on CI an SBC ran its three simulations to the end after one."""
    import signal

    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
