"""Settings of the textbook peer: a small API-only Django project configured the way the Django and DRF docs
suggest. Only `python -m bench` starts it; the service never imports it."""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

SECRET_KEY = env("SECRET_KEY", default="peer-insecure-development-key")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "rest_framework",
    "pay",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "pay.middleware.ApiHeadersMiddleware",
]

ROOT_URLCONF = "textbook.urls"
WSGI_APPLICATION = "textbook.wsgi.application"

DATABASES = {"default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/pagamentos_bench_peer")}
# Persistent connections with health checks, as the Django docs recommend behind gunicorn.
DATABASES["default"]["CONN_MAX_AGE"] = 60
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "America/Sao_Paulo"
USE_I18N = False
USE_TZ = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["pay.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["pay.authentication.HasApiKey"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "pay.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="WARNING")},
}

# The product's settings (SPEC): the platform's receiving Pix key, defaults per merchant, the ISPB of end-to-end ids.
PUBLIC_BASE_URL = env("PUBLIC_BASE_URL", default="http://127.0.0.1:8000")
PIX_KEY = env("PIX_KEY", default="1c8a2f0e-5b7d-4e3a-9f61-2d4c8b0a7e95")
PIX_MERCHANT_CITY = "SAO PAULO"
PIX_ISPB = "12345678"
API_KEY_DIGEST_KEY = env("API_KEY_DIGEST_KEY", default=SECRET_KEY)
