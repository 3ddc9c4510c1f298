"""Queueing a task by name, so that services need not import tasks modules."""

from __future__ import annotations

from celery import current_app


def task_enqueue(name: str, *, countdown: float | None = None, **kwargs) -> None:
    """Queue the task registered as `name` (its module path, as CELERY_BEAT_SCHEDULE names it) with `kwargs`.

    Services queue their own app's tasks by name: a tasks module imports its services, so a service importing it
    back would be a cycle. Every app's AppConfig.ready() imports its tasks modules, so the name is registered in the
    web processes as in the worker; a missing one is a KeyError, not a silent drop."""
    task = current_app.tasks[name]
    if countdown is None:
        task.delay(**kwargs)
    else:
        task.apply_async(kwargs=kwargs, countdown=countdown)
