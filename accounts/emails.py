"""The e-mails the accounts app sends, each in plain text and HTML, in the request's language (Django's e-mail
framework, configured by EMAIL_URL)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)


def email_send(*, to: str, template: str, context: dict) -> None:
    """Render templates/accounts/emails/<template>_subject.txt, .txt and .html and send them as one message."""
    context = {**context, "base_url": settings.PUBLIC_BASE_URL}
    subject = " ".join(render_to_string(f"accounts/emails/{template}_subject.txt", context).split())
    message = EmailMultiAlternatives(subject=subject, body=render_to_string(f"accounts/emails/{template}.txt", context),
                                     from_email=settings.DEFAULT_FROM_EMAIL, to=[to])
    message.attach_alternative(render_to_string(f"accounts/emails/{template}.html", context), "text/html")
    message.send()
    logger.info("email.sent", extra={"template": template})
