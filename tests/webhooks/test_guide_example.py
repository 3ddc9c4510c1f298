"""The verification code docs/webhooks.md gives merchants must verify our real signatures."""

import re
import time

from django.conf import settings

from webhooks import signing


def readme_verify_function():
    readme = (settings.BASE_DIR / "docs" / "webhooks.md").read_text()
    code = next(block for block in re.findall(r"```python\n(.*?)```", readme, re.S) if "def verify_webhook" in block)
    namespace: dict = {}
    exec(code, namespace)  # our own guide's example, run as a merchant would run it
    return namespace["verify_webhook"]


def test_readme_example_verifies_current_and_rotated_signatures():
    verify = readme_verify_function()
    old, new = signing.secret_generate(), signing.secret_generate()
    body = b'{"id":"e1","type":"payin.paid"}'
    now = int(time.time())

    headers = signing.headers([new, old], message_id="e1", timestamp=now, body=body)

    assert verify(new, headers, body)
    assert verify(old, headers, body)
    assert not verify(signing.secret_generate(), headers, body)
    assert not verify(new, headers, body + b" ")
    assert not verify(new, signing.headers([new], message_id="e1", timestamp=now - 3600, body=body), body)
