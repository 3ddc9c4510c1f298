import gc
import logging.config
import os

from celery import Celery
from celery.signals import setup_logging, task_prerun, worker_ready
from django.conf import settings
from django.utils import translation

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


app = Celery("pagamentos")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
def _english(**kwargs) -> None:
    """Tasks write what merchants' systems and operators read (events, logs): in English, as the API answers,
    whatever LANGUAGE_CODE the dashboard defaults to. Per task: a worker's threads each keep their own language."""
    translation.activate("en")


@setup_logging.connect
def _django_logging(**kwargs) -> None:
    """The worker and beat log as the web processes do (settings.LOGGING: one JSON object a line, with each record's
    fields, e.g. the payout id of a rail error), instead of Celery replacing it with its own plain-text format."""
    logging.config.dictConfig(settings.LOGGING)


@worker_ready.connect
def _gc_freeze(**kwargs) -> None:
    """A ready worker's objects (Django, the tasks, the broker's client) live as long as it does: frozen out of the
    garbage collector's view, a full collection no longer walks them all while every pool thread waits (as the web
    workers, gunicorn.conf.py)."""
    gc.freeze()
