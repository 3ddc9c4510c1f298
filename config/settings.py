"""Every setting comes from the environment (django-environ); the defaults run the service on one laptop.

With no environment at all: the embedded PostgreSQL and Redis that `make run` and `make test` start under `.local/`
(tools/localservices.py). Production sets DATABASE_URL, CELERY_BROKER_URL and CACHE_URL (see `.env.example`).
"""

import os
import secrets
from pathlib import Path

import environ
from kombu import Queue

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
# The laptop's files (the embedded PostgreSQL and Redis, the local secret key, metrics); relative to the repository
# unless absolute.
LOCAL_DIR = BASE_DIR / env.str("LOCAL_DIR", default=".local")


def _local_secret_key() -> str:
    """A per-checkout random key, so a laptop never runs on a key published in the repository."""
    path = LOCAL_DIR / "secret_key"
    if not path.exists():
        LOCAL_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY_FROM_ENVIRONMENT = bool(env.str("SECRET_KEY", default=""))
SECRET_KEY = env.str("SECRET_KEY", default="") or _local_secret_key()
# The key of the HMAC that digests API secrets. Separate from SECRET_KEY so that rotating the session key does not
# invalidate every merchant's API keys; derived from it when not set.
API_KEY_DIGEST_KEY = env.str("API_KEY_DIGEST_KEY", default="")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
API_VERSION = "2026-11-20"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "core",
    "accounts",
    "integrations",
    "payments",
    "webhooks",
]

MIDDLEWARE = [
    "core.metrics.RequestMetricsMiddleware",
    "core.middleware.RequestIdMiddleware",
    # Outside ApiErrorMiddleware: the API's own refusals and the error bodies it puts in place of Django's pages get
    # the security headers (nosniff, HSTS, Referrer-Policy, X-Frame-Options) like every other answer (issue 37, 17).
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.middleware.ApiErrorMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # core.middleware.PagesOnly: Django's session, user and message middleware, skipped on API paths
    "core.middleware.SessionMiddleware",
    "core.middleware.LanguageMiddleware",  # after sessions, before common (Django's LocaleMiddleware's place)
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "core.middleware.AuthenticationMiddleware",
    "core.middleware.MessageMiddleware",
    "accounts.middleware.DashboardSecurityMiddleware",  # CSP, the admin's sign-in and 2FA, staff audit, sessions
    "payments.middleware.SimulatedLiveModeMiddleware",  # live API responses on the simulator say so
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "dashboard:login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.dashboard",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------------------------------
# PostgreSQL everywhere. The defaults are the embedded servers that `make run` and `make test` start under .local/
# (tools/localservices.py); production and CI set the URLs.
_EMBEDDED_DATABASE = f"postgres://postgres@/pagamentos?host={LOCAL_DIR / 'postgres'}"
DATABASES = {"default": env.db("DATABASE_URL", default=_EMBEDDED_DATABASE)}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache (rate-limit counters) -----------------------------------------------------------------------------------
CACHES = {"default": env.cache("CACHE_URL", default=f"redis://{LOCAL_DIR / 'redis' / 'redis.socket'}?db=1")}
CACHES["default"].setdefault("OPTIONS", {}).update({"socket_timeout": 1, "socket_connect_timeout": 1})

# --- Celery --------------------------------------------------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL",
                            default=f"redis+socket://{LOCAL_DIR / 'redis' / 'redis.socket'}?virtual_host=2")
# Every task is a nudge: the rows it works on (the outbox) and beat's periodic jobs that find due rows are what
# never lose work. kombu's emulation of acknowledgements (each message copied into an "unacked" hash on receipt
# and removed on ack, two Redis transactions, brought back after a visibility timeout) was ~0.6 ms of a worker's
# CPU per message, 45% of a no-op task's. Without it a message a worker holds is in its memory: put back on a warm
# shutdown, gone with a crash, after which the sweepers send the work again within a minute. Hence no
# task_acks_late and no task_reject_on_worker_lost: without emulation they change nothing (and the thread pool has
# no child process to lose). docs/decisions/0045-tasks-are-nudges.md.
CELERY_BROKER_TRANSPORT_OPTIONS = {"ack_emulation": False}
# Without it, Celery's Django fixup closes the database connection before and after every task, so each webhook
# delivery would open a new PostgreSQL connection. Connections are recycled every 2 x this many tasks.
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=1000)
# Webhook deliveries wait on merchants' servers; money must not wait behind them. They have a queue of their own
# ("webhooks"), everything else (payouts, refunds, reconciliation) the default one: a worker started without -Q
# consumes both, taking from each in turn, so a storm of deliveries never stands in front of a payout (and a burst of
# payouts in front of deliveries); production can also run a worker per queue (-Q celery / -Q webhooks).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = (Queue("celery"), Queue("webhooks"))
CELERY_TASK_ROUTES = {"webhooks.tasks.*": {"queue": "webhooks"}}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# What a plain `celery -A config worker` runs (docs/decisions/0046-worker-threads-and-two-queues.md): threads, as
# every worker command of the project. Celery's own default, prefork with a process per core, cost about 1 ms of CPU
# more per task (each message crosses a pipe to a child and back), and rail calls and deliveries wait on the network
# anyway. 8 threads drained a payout burst faster than 2 or 4 for the same CPU per payout. `--pool` and
# `--concurrency` override both.
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = 8
# Webhooks (issue 17, the plain command): threads x 8 delivered 405-417/s on a quiet
# machine against prefork x 2's 340-383 (2.0 against 2.4 ms of worker CPU a delivery); 16 threads or a prefetch
# multiplier of 4 delivered no more (250-340/s in the same noisy runs). The multiplier stays 1 for money: with more,
# a payout message would queue inside the worker behind the deliveries it reserved (threads x multiplier of them,
# up to 13 s each to a dead receiver); with 1 it is fetched as soon as a thread is free.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BEAT_SCHEDULE_FILENAME = str(LOCAL_DIR / "celerybeat-schedule")
WEBHOOK_SWEEP_INTERVAL_SECONDS = env.float("WEBHOOK_SWEEP_INTERVAL_SECONDS", default=15.0)
CELERY_BEAT_SCHEDULE = {
    "idempotency-keys-purge": {"task": "integrations.tasks.idempotency_keys_purge", "schedule": 3600.0},
    "webhook-deliveries-sweep": {"task": "webhooks.tasks.deliveries_sweep",
                                 "schedule": WEBHOOK_SWEEP_INTERVAL_SECONDS},
    "events-purge": {"task": "webhooks.tasks.events_purge", "schedule": 3600.0},
    "payins-expire": {"task": "payments.payins.tasks.payins_expire", "schedule": 30.0},
    "card-settlements-release": {"task": "payments.payins.tasks.card_settlements_release", "schedule": 300.0},
    "rail-reconcile": {"task": "payments.inbound.tasks.rail_reconcile", "schedule": 60.0},
    "payouts-reconcile": {"task": "payments.payouts.tasks.payouts_reconcile", "schedule": 20.0},
    "disputes-expire": {"task": "payments.disputes.tasks.disputes_expire", "schedule": 300.0},
}

# --- Auth, sessions, security --------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^health$", r"^metrics$"]  # the load balancer and Prometheus call the machines
_https = PUBLIC_BASE_URL.startswith("https://")
SESSION_COOKIE_SECURE = _https
CSRF_COOKIE_SECURE = _https
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
# A dashboard that moves money: a session lasts a working day from the last change to it (log-in, mode switch), not
# Django's two weeks, and page views do not extend it. The cookie stays persistent: browsers that restore their tabs
# restore "until the browser closes" cookies too, so expiring at close would promise what it cannot keep.
SESSION_COOKIE_AGE = 12 * 60 * 60
SESSION_EXPIRE_AT_BROWSER_CLOSE = False
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[PUBLIC_BASE_URL])
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if _https else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _https
SECURE_HSTS_PRELOAD = _https
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# --- Files, i18n ---------------------------------------------------------------------------------------------------
# Payers are Brazilian: pt-BR is the default and the payer's pages always use it (payments.hosted.views); the
# dashboard follows the browser or the language switch; the JSON API answers in English (core.middleware).
LANGUAGE_CODE = "pt-br"
LANGUAGES = [("pt-br", "Português (Brasil)"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "America/Sao_Paulo"
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=str(LOCAL_DIR / "staticfiles"))
Path(STATIC_ROOT).mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_ROOT = BASE_DIR / "static" / "root"  # files browsers ask for at the root: /favicon.ico
MEDIA_ROOT = env.path("MEDIA_ROOT", default=str(LOCAL_DIR / "media"))
MEDIA_URL = "/media/"
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
KYC_DOCUMENT_MAX_BYTES = 10 * 1024 * 1024

# EMAIL_URL: consolemail:// prints messages (the local default), filemail:// writes each to a file under LOCAL_DIR/mail/
# (what `make run` uses), smtp+tls://user:password@host:587 sends them.
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
if vars().get("EMAIL_BACKEND") == "django.core.mail.backends.filebased.EmailBackend":
    EMAIL_FILE_PATH = str(LOCAL_DIR / "mail")  # django-environ would read filemail:///abs/path as a relative path
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="no-reply@pagamentos.local")

# --- API -----------------------------------------------------------------------------------------------------------
API_MAX_BODY_BYTES = 64 * 1024
API_RATE_LIMIT = env.int("API_RATE_LIMIT", default=100)
API_AUTH_FAILURES_PER_MINUTE = env.int("API_AUTH_FAILURES_PER_MINUTE", default=20)
# How many proxies (load balancers) append to X-Forwarded-For in front of the web processes: the client address
# used for the failed-authentication limit is read that many entries from its right. 0: REMOTE_ADDR.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
IDEMPOTENCY_KEY_TTL_HOURS = 24
# An Idempotency-Key whose request has been "in progress" this long is taken to belong to a dead process.
IDEMPOTENCY_LOCK_TIMEOUT_SECONDS = 60

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["integrations.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["core.parsers.JsonParser"],
    "DEFAULT_RENDERER_CLASSES": ["core.renderers.ApiJSONRenderer"],
    "EXCEPTION_HANDLER": "core.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "core.schema.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_CLASSES": [],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Pagamentos API",
    "DESCRIPTION": "Pix, card and boleto pay-in, Pix payouts, balances and signed webhooks for Brazilian merchants.",
    "VERSION": API_VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "basicAuth": {"type": "http", "scheme": "basic", "description": "public key as user, secret as password"},
            "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "x-api-key"},
            "apiSecretHeader": {"type": "apiKey", "in": "header", "name": "x-api-secret"},
        }
    },
    "SECURITY": [{"basicAuth": []}, {"apiKeyHeader": [], "apiSecretHeader": []}],
    "AUTHENTICATION_WHITELIST": [],
    # The unmatched-payment policy's four fields share one set of actions: one enum component, not four.
    # Choice sets used by more than one component (a charge in the sandbox's answer, an unmatched payment it names)
    # keep the names they have in the component that defines them.
    "ENUM_NAME_OVERRIDES": {"UnmatchedActionEnum": "payments.models.UnmatchedAction",
                            "PayinStatusEnum": "payments.models.PayinStatus.values",
                            "UnmatchedPaymentKindEnum": "payments.models.UnmatchedKind.values",
                            "UnmatchedPaymentStatusEnum": "payments.models.UnmatchedStatus.values"},
    # The reference integrators read: descriptions, examples and the error codes (payments/reference/).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "payments.reference.hook.reference_postprocess"],
}

# --- Payments and webhooks (used from the pay-in, payout and webhook issues on) ------------------------------------
PAYMENTS_RAIL = env.str("PAYMENTS_RAIL", default="simulator")
# Live mode on the simulator moves no money: `check --deploy` (DEBUG off) refuses it unless this says it is meant.
ALLOW_SIMULATED_LIVE_MODE = env.bool("ALLOW_SIMULATED_LIVE_MODE", default=False)
# The platform's receiving Pix key at the live rail (Efí): no default, `check --deploy` names it when it is missing.
# Test mode's static BR Codes carry the Central Bank's example key instead (payments.rails.simulator), never this one.
PIX_KEY = env.str("PIX_KEY", default="")
# The Efí rail (PAYMENTS_RAIL=efi): its API Pix over mutual TLS with OAuth2 client credentials. EFI_CERT_FILE is one
# PEM with the client certificate and its key (docs/efi.md); EFI_CA_FILE the CA bundle for Efí's server
# certificate when the system's is not the one to trust. The sandbox host is https://pix-h.api.efipay.com.br.
EFI_BASE_URL = env.str("EFI_BASE_URL", default="https://pix.api.efipay.com.br").rstrip("/")
EFI_CLIENT_ID = env.str("EFI_CLIENT_ID", default="")
EFI_CLIENT_SECRET = env.str("EFI_CLIENT_SECRET", default="")
EFI_CERT_FILE = env.str("EFI_CERT_FILE", default="")
EFI_CA_FILE = env.str("EFI_CA_FILE", default="")
EFI_TIMEOUT_SECONDS = env.float("EFI_TIMEOUT_SECONDS", default=10.0)
# The secret in the notification URL registered with Efí (at least 16 URL-safe characters): a notification without it
# moves nothing. EFI_WEBHOOK_MTLS=true when the HTTPS front end checks Efí's client certificate itself (see README).
EFI_WEBHOOK_SECRET = env.str("EFI_WEBHOOK_SECRET", default="")
EFI_WEBHOOK_MTLS = env.bool("EFI_WEBHOOK_MTLS", default=False)
# Efí's Charges API (API Cobranças: live cards and bolix), the same application (EFI_CLIENT_ID/SECRET) with its
# charges scopes; no client certificate. The sandbox host is https://cobrancas-h.api.efipay.com.br/v1. EFI_PAYEE_CODE
# is the account's "Identificador de Conta", which the browser's tokenizer needs (docs/efi.md).
# The only JSON-API routes that take a form body: a rail that POSTs its notifications as a form (Efí's Charges API).
API_FORM_BODY_PREFIXES = ("/rails/efi/charges/notify/",)
EFI_CHARGES_BASE_URL = env.str("EFI_CHARGES_BASE_URL", default="https://cobrancas.api.efipay.com.br/v1").rstrip("/")
EFI_PAYEE_CODE = env.str("EFI_PAYEE_CODE", default="")
# The origin of Efí's card tokenizer script, the one origin the hosted card page's CSP allows besides ours.
EFI_TOKENIZER_SCRIPT_URL = env.str(
    "EFI_TOKENIZER_SCRIPT_URL",
    default="https://cdn.jsdelivr.net/gh/efipay/js-payment-token-efi/dist/payment-token-efi-umd.min.js")
# The origins Efí's tokenizer sends the card to, from the payer's browser (the card page's CSP connect-src).
EFI_TOKENIZER_CONNECT_ORIGINS = env.list("EFI_TOKENIZER_CONNECT_ORIGINS", default=["https://*.efipay.com.br"])
# How far back `rail_reconcile` asks the rail for received Pix the notifications may have missed.
RAIL_RECONCILE_HOURS = env.float("RAIL_RECONCILE_HOURS", default=6.0)
PIX_MERCHANT_CITY = env.str("PIX_MERCHANT_CITY", default="SAO PAULO")
PIX_ISPB = env.str("PIX_ISPB", default="00000000")
BOLETO_BANK_CODE = env.str("BOLETO_BANK_CODE", default="001")
# Fees and limits (SPEC §4.1, §5); each can be overridden per merchant in the admin. Percentages in basis points.
FEE_PIX_BPS = env.int("FEE_PIX_BPS", default=99)
FEE_CARD_BPS = env.int("FEE_CARD_BPS", default=399)
FEE_CARD_FIXED = env.int("FEE_CARD_FIXED", default=39)
FEE_BOLETO_FIXED = env.int("FEE_BOLETO_FIXED", default=349)
FEE_PAYOUT_FIXED = env.int("FEE_PAYOUT_FIXED", default=0)
CHARGE_MAX_AMOUNT = env.int("CHARGE_MAX_AMOUNT", default=10_000_000)
PAYOUT_MAX_AMOUNT = env.int("PAYOUT_MAX_AMOUNT", default=5_000_000)
PAYOUT_DAILY_MAX = env.int("PAYOUT_DAILY_MAX", default=20_000_000)
# The most payouts one worker task starts and sends (issue 17): the rail's own `payout_batch` (50 on the simulator,
# 5 on Efí), never more than this.
PAYOUT_BATCH_MAX = env.int("PAYOUT_BATCH_MAX", default=50)
CARD_SETTLEMENT_DAYS = env.int("CARD_SETTLEMENT_DAYS", default=30)
# Live boletos registered at the bank (Efí's bolix): the fine and monthly interest of a late payment (basis points;
# 0 is none, per merchant in the admin), and the days after the due date the bank still takes payment.
BOLETO_FINE_BPS = env.int("BOLETO_FINE_BPS", default=0)
BOLETO_INTEREST_BPS = env.int("BOLETO_INTEREST_BPS", default=0)
BOLETO_DAYS_TO_WRITE_OFF = env.int("BOLETO_DAYS_TO_WRITE_OFF", default=30)
# Days a merchant has to answer a dispute with evidence before it is LOST (issue 14): card chargebacks, Pix MED.
DISPUTE_CHARGEBACK_EVIDENCE_DAYS = env.int("DISPUTE_CHARGEBACK_EVIDENCE_DAYS", default=7)
DISPUTE_MED_EVIDENCE_DAYS = env.int("DISPUTE_MED_EVIDENCE_DAYS", default=7)
# Seconds the simulator rail waits before it confirms test-mode Pix refunds (and, in the payout issue, payouts).
SIMULATOR_AUTO_CONFIRM_SECONDS = env.int("SIMULATOR_AUTO_CONFIRM_SECONDS", default=2)
# Seconds the simulator rail takes to answer a payout (0; tests raise it to kill a worker mid-send).
SIMULATOR_LATENCY_SECONDS = env.float("SIMULATOR_LATENCY_SECONDS", default=0.0)
WEBHOOKS_ALLOW_PRIVATE_TARGETS = env.bool("WEBHOOKS_ALLOW_PRIVATE_TARGETS", default=False)
WEBHOOKS_ALLOW_HTTP = env.bool("WEBHOOKS_ALLOW_HTTP", default=False)
# Signing secrets are stored encrypted under this key (derived from SECRET_KEY when unset).
WEBHOOK_SECRET_ENCRYPTION_KEY = env.str("WEBHOOK_SECRET_ENCRYPTION_KEY", default="")
# Encrypts the two-factor seeds of dashboard users (core/crypto.py); derived from SECRET_KEY when unset.
TOTP_SECRET_ENCRYPTION_KEY = env.str("TOTP_SECRET_ENCRYPTION_KEY", default="")
# A claimed delivery is leased this long: longer than one attempt can take (name resolution, 2 addresses x 3 s connect,
# and the watchdog's 3 + 10 s), so a slow attempt is never sent a second time beside itself.
WEBHOOK_DELIVERY_LEASE_SECONDS = env.int("WEBHOOK_DELIVERY_LEASE_SECONDS", default=60)
# The sweeper re-enqueues a delivery this long past due and unclaimed (its message was lost).
WEBHOOK_SWEEP_GRACE_SECONDS = env.float("WEBHOOK_SWEEP_GRACE_SECONDS", default=10.0)
# The sweeper enqueues a delivery again only this long after its last message: time for a backlog to drain.
WEBHOOK_REENQUEUE_SECONDS = env.float("WEBHOOK_REENQUEUE_SECONDS", default=60.0)
# Retries due within this many seconds are enqueued with a countdown; later ones are left to the sweeper.
WEBHOOK_MAX_ETA_SECONDS = env.int("WEBHOOK_MAX_ETA_SECONDS", default=600)
# A delivery succeeds on a 2xx answered in full within WEBHOOK_TIMEOUT_SECONDS, connecting within the other.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
WEBHOOK_CONNECT_TIMEOUT_SECONDS = env.float("WEBHOOK_CONNECT_TIMEOUT_SECONDS", default=3.0)
EVENT_RETENTION_DAYS = 30
WEBHOOK_RETRY_SCHEDULE = [
    int(s) for s in env.list("WEBHOOK_RETRY_SCHEDULE", default=["60", "300", "1800", "7200", "18000", "36000",
                                                                   "36000", "86400"])
]

# --- Operations: metrics and error reporting ------------------------------------------------------------------------
# GET /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`; unset, it is a 404. Counters are summed across
# processes when PROMETHEUS_MULTIPROC_DIR names a directory (read by prometheus_client itself; see core/metrics.py).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
if os.environ.get("PROMETHEUS_MULTIPROC_DIR") == "":
    # prometheus_client switches to multiprocess mode when the variable merely exists, writing into the working
    # directory; an empty value (as in a copied .env) means "off".
    del os.environ["PROMETHEUS_MULTIPROC_DIR"]
# Errors go to Sentry when set, scrubbed of secrets, card data and authorization headers (core/errortracking.py).
SENTRY_DSN = env.str("SENTRY_DSN", default="")
SENTRY_ENVIRONMENT = env.str("SENTRY_ENVIRONMENT", default="production")
if SENTRY_DSN:  # imported only when used: sentry_sdk costs every process's start-up otherwise
    from core import errortracking

    errortracking.sentry_init(dsn=SENTRY_DSN, environment=SENTRY_ENVIRONMENT)

# --- Logging -------------------------------------------------------------------------------------------------------
LOG_FORMAT = env.str("LOG_FORMAT", default="text" if DEBUG else "json")
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
# Celery's line per task received and per task finished: every periodic task (sweepers, reconciliation) writes two a
# run. `make run` sets WARNING so that the terminal shows what happens, not the schedule (issue 37, item 19).
WORKER_TASK_LOG_LEVEL = env.str("WORKER_TASK_LOG_LEVEL", default=LOG_LEVEL)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "core.logging.RequestIdFilter"},
                "redact_path": {"()": "core.logging.RedactPathFilter"}},
    "formatters": {
        "json": {"()": "core.logging.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # Django's own "Not Found: /path" lines duplicate our request log and add nothing.
        "django.request": {"level": "ERROR", "filters": ["redact_path"]},
        # Its DEBUG lines (a variable missing from a template) carry the exception context, a 404's whole path too.
        "django.template": {"level": "INFO"},
        # Beat's "Sending due task" line for every run of every periodic task: warnings and errors only.
        "celery.beat": {"level": "WARNING"},
        "celery.app.trace": {"level": WORKER_TASK_LOG_LEVEL},
        "celery.worker.strategy": {"level": WORKER_TASK_LOG_LEVEL},
    },
}
