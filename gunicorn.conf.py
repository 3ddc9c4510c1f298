"""gunicorn's settings for the web processes, read by `gunicorn config.wsgi:application` from the working directory
(the systemd unit's WorkingDirectory; command-line flags override them).

Chosen by measurement (issue 17; docs/performance.md and bench/README.md): sync
workers, one more than the machine's cores. On the 2-core reference machine 3 sync workers kept both cores busy on
every scenario; a fourth only added context switches, and gthread (4×2, 2×4, 3×3) handed the GIL between threads,
left up to a third of a core idle and tripled p99. The payout's lock is held for one statement (goal 1), so lock
waits no longer leave a core idle for want of a spare worker. `WEB_CONCURRENCY` overrides the count, as on most
platforms."""

import os

worker_class = "sync"
# The cores this process may run on (a cpuset or taskset narrows them; a container's CPU quota does not show here:
# set WEB_CONCURRENCY there).
workers = int(os.environ.get("WEB_CONCURRENCY") or len(os.sched_getaffinity(0)) + 1)

# The access log (the unit's `--access-logfile -`) in the combined format, but for what could hold a credential:
# the path is the one the application logs (core.logging.ACCESS_LOG_PATH: `/pay/<token>`,
# `/rails/efi/webhook/<secret>`), never the request line, whose path and query carry the payer's token and the rail's
# notification secret; no Referer (a payer's page is the Referer of its own status polls); no user (HTTP Basic's user
# is a public key, or a secret sent in its place). The request id ends the line, to find the application's lines. A
# request the application never saw logs "-" for its path.
access_log_format = ('%(h)s - - %(t)s "%(m)s %({pagamentos.log_path}e)s %(H)s" %(s)s %(b)s "-" "%(a)s" '
                     '%({x-request-id}o)s')


def post_worker_init(worker) -> None:
    """Once the worker has loaded the application, its objects (modules, settings, models, URL patterns: some
    125,000) leave the garbage collector's view for good (`gc.freeze`): they live as long as the process, and a full
    collection walked them all, a 59-69 ms pause of the request it fell on, about once in 6,000 requests; after the
    freeze one walks what requests left behind, about 7 ms (docs/performance.md)."""
    import gc

    gc.freeze()
