import re
import uuid

REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
API_VERSION = "2026-11-20"


class ApiHeadersMiddleware:
    """X-Request-Id (a valid incoming one is echoed) and Api-Version on every response."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-Id", "")
        request.request_id = incoming if REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex
        response = self.get_response(request)
        response["X-Request-Id"] = request.request_id
        response["Api-Version"] = API_VERSION
        return response
