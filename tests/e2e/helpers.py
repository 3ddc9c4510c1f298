"""What the browser tests share: screenshots with the 390 px check, logging in, a webhook receiver, API calls.

Screenshots land in tests/e2e/screenshots/ (ignored by git), so that `make test` changes no tracked file;
`make screenshots` runs these tests with SCREENSHOTS_DIR=docs/screenshots to refresh the committed ones (the README
points reviewers there): `<name>-desktop.png` at 1280 px wide and `<name>-mobile.png` at 390 px, both of the whole page
(clipped if a page is extremely long, to keep the committed PNGs small).
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyotp
import requests
from playwright.sync_api import Page, expect

from accounts.models import Merchant, User
from core import dates
from payments.models import Payin
from payments.payins import services as payins
from payments.payins.validation import payin_request_validate
from tests.factories import totp_code

ROOT = Path(__file__).resolve().parents[2]


def screenshots_dir(environ=os.environ) -> Path:
    """Where `shot` writes: SCREENSHOTS_DIR (relative to the repository) when set, else the ignored folder."""
    return ROOT / environ.get("SCREENSHOTS_DIR", "tests/e2e/screenshots")


SCREENSHOTS = screenshots_dir()
DESKTOP = {"width": 1280, "height": 900}
MOBILE = {"width": 390, "height": 844}
MAX_SHOT_HEIGHT = 4000  # px; a longer page is clipped to its top

PASSWORD = "correct-horse-battery"  # tests.factories.UserFactory's

# Elements sticking out to the right of the viewport, named so a failure says where to look.
_OVERFLOWING = """() => {
  const width = window.innerWidth, found = [];
  for (const el of document.querySelectorAll("body *")) {
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 1 && getComputedStyle(el).position !== "fixed") {
      const classes = typeof el.className === "string" ? el.className.trim().split(/\\s+/).filter(Boolean) : [];
      const cls = classes.map((name) => "." + name).join("");
      found.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${cls} (right edge ${Math.round(box.right)})`);
    }
  }
  return found.slice(0, 8);
}"""


def _capture(page: Page, path: Path) -> None:
    height = page.evaluate("document.documentElement.scrollHeight")
    width = page.viewport_size["width"]
    if height > MAX_SHOT_HEIGHT:
        page.screenshot(path=path, full_page=True, animations="disabled", caret="hide",
                        clip={"x": 0, "y": 0, "width": width, "height": MAX_SHOT_HEIGHT})
    else:
        page.screenshot(path=path, full_page=True, animations="disabled", caret="hide")


def no_horizontal_scroll(page: Page) -> tuple[bool, str]:
    scroll_width, inner_width = page.evaluate(
        "() => [document.documentElement.scrollWidth, window.innerWidth]")
    if scroll_width <= inner_width:
        return True, ""
    return False, f"scrollWidth {scroll_width} > innerWidth {inner_width}; sticking out: {page.evaluate(_OVERFLOWING)}"


def shot(page: Page, name: str) -> None:
    """Screenshot the page at 1280 px and at 390 px, and fail if the 390 px layout scrolls sideways."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # no stray focus ring
    _capture(page, SCREENSHOTS / f"{name}-desktop.png")
    page.set_viewport_size(MOBILE)
    try:
        fits, why = no_horizontal_scroll(page)
        _capture(page, SCREENSHOTS / f"{name}-mobile.png")
    finally:
        page.set_viewport_size(DESKTOP)
    assert fits, f"{name} ({page.url}) scrolls sideways at 390 px: {why}"


def log_in(page: Page, email: str, password: str = PASSWORD) -> None:
    page.goto("/dashboard/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_role("textbox", name="Password", exact=True).fill(password)
    page.get_by_role("button", name="Log in").click()
    second_step(page, email)
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()


def second_step(page: Page, email: str) -> None:
    """Issue 15: a user with an authenticator is asked for its code after the password."""
    page.wait_for_load_state()
    if "/dashboard/login/verify/" in page.url:
        page.get_by_label("Code").fill(totp_code(User.objects.get(email=email)))
        page.get_by_role("button", name="Verify").click()


# --- Two-factor sign-in, as a person with an authenticator app does it ------------------------------------------------
@dataclass
class Authenticator:
    """The app a person sets up with the key the Security page shows: a 6-digit code per 30-second step."""

    secret: str
    last_step: int = 0

    def code(self) -> str:
        # The server takes each step's code once; a second sign-in within one step uses the next step's code (the
        # server accepts one step of drift), and a third waits for the clock, as a person would.
        step = self.last_step + 1
        while step > int(time.time()) // 30 + 1:
            time.sleep(0.5)
        step = max(step, int(time.time()) // 30)
        self.last_step = step
        return pyotp.TOTP(self.secret).generate_otp(step)


def two_factor_enrol(page: Page) -> tuple[Authenticator, list[str]]:
    """Turn two-factor sign-in on from the Security page: type the key shown there into an authenticator, confirm
    with its first code; the app, and the recovery codes the page shows once."""
    page.get_by_role("link", name="Security", exact=True).click()
    expect(page.get_by_role("heading", name="Two-factor sign-in")).to_be_visible()
    expect(page.get_by_role("img", name="QR code for your authenticator app")).to_be_visible()
    app = Authenticator(secret=page.get_by_test_id("totp-secret").inner_text().strip())
    page.get_by_label("Code").fill(app.code())
    page.get_by_role("button", name="Turn on").click()
    expect(page.get_by_role("alert").filter(has_text="Two-factor sign-in is on.")).to_be_visible()
    expect(page.get_by_test_id("two-factor-status")).to_contain_text("On: signing in asks for a code")
    codes = [code.strip() for code in page.get_by_test_id("recovery-codes").get_by_role("listitem").all_inner_texts()]
    assert len(codes) == 10
    return app, codes


def admin_log_in(page: Page, email: str, password: str = PASSWORD) -> None:
    page.goto("/admin/login/?next=/admin/")  # the admin signs in through the dashboard's form (issue 15)
    page.get_by_label("Email").fill(email)
    page.get_by_role("textbox", name="Password", exact=True).fill(password)
    page.get_by_role("button", name="Log in").click()
    second_step(page, email)
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()


def admin_action(page: Page, merchant_name: str, action: str) -> None:
    """On the merchant list, tick one merchant and run an action on it."""
    page.get_by_role("checkbox", name=re.compile(rf"Select this object.* {re.escape(merchant_name)}$")).check()
    page.get_by_role("combobox", name=re.compile(r"^Action:")).select_option(label=action)
    page.get_by_role("button", name="Go").click()


def section(page: Page, heading: str | re.Pattern):
    """The card (a <section>) under a heading, to look inside it only."""
    return page.locator("section").filter(has=page.get_by_role("heading", name=heading, exact=True))


# --- The API, as the merchant's server calls it ----------------------------------------------------------------------
@dataclass
class Api:
    base_url: str
    public_key: str
    secret_key: str

    def call(self, method: str, path: str, body: dict | None = None) -> requests.Response:
        headers = {"Idempotency-Key": str(uuid.uuid4())} if method == "POST" else {}
        return requests.request(method, self.base_url + path, json=body, headers=headers, timeout=10,
                                auth=(self.public_key, self.secret_key))

    def ok(self, method: str, path: str, body: dict | None = None) -> dict:
        response = self.call(method, path, body)
        assert response.status_code in (200, 201), (response.status_code, response.text)
        return response.json()


CUSTOMER = {"name": "Ana Souza", "document": "529.982.247-25", "email": "ana@example.com"}
ADDRESS = {"street": "Av. Paulista", "number": "1000", "zipCode": "01310-100", "city": "São Paulo", "state": "SP"}


def charge_body(*, method: str = "PIX", amount: int, reference_id: str) -> dict:
    body = {"paymentMethod": method, "amount": amount, "referenceId": reference_id, "payerIp": "203.0.113.9",
            "isPhysicalProduct": False, "customer": dict(CUSTOMER),
            "items": [{"title": "Caneca", "quantity": 2, "unitPrice": amount // 2},
                      {"title": "Frete", "quantity": 1, "unitPrice": amount - 2 * (amount // 2)}]}
    body["items"] = [item for item in body["items"] if item["unitPrice"] > 0]
    if method == "BOLETO":
        body["customer"].update(phone="(11) 98765-4321", address=dict(ADDRESS))
    return body


def path_of(url: str) -> str:
    """The path of an absolute URL the API hands out, to open it on the test server."""
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def sandbox_charge(merchant: Merchant, *, method: str, reference_id: str) -> Payin:
    """A test-mode charge of R$ 80,00 made in the test process, as POST /payin makes it (a Pix starts PENDING, the
    sandbox's test card is paid at once)."""
    body = {"paymentMethod": method, "amount": 8_000, "referenceId": reference_id, "payerIp": "203.0.113.20",
            "isPhysicalProduct": False, "items": [{"title": "Vaso", "quantity": 1, "unitPrice": 8_000}],
            "customer": {"name": "Bruna Lima", "document": "529.982.247-25", "email": "bruna@example.com"}}
    if method == "CREDIT_CARD":
        body["card"] = {"holderName": "BRUNA LIMA", "number": "4111111111111111", "expirationMonth": "11",
                        "expirationYear": "2031", "cvv": "321"}
    data = payin_request_validate(body, merchant=merchant, livemode=False, today=dates.sao_paulo_today())
    return payins.payin_create(merchant=merchant, livemode=False, data=data)


# --- A webhook receiver ----------------------------------------------------------------------------------------------
@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 that answers webhooks with the statuses queued in `answers` (then 200)."""

    server: ThreadingHTTPServer
    answers: list[int] = field(default_factory=list)
    received: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def next_answer(self) -> int:
        with self.lock:
            return self.answers.pop(0) if self.answers else 200


def receiver_start() -> Receiver:
    holder: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            receiver = holder[0]
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            status = receiver.next_answer()
            with receiver.lock:
                receiver.received.append({"path": self.path, "status": status, "body": body,
                                          "webhook_id": self.headers.get("webhook-id")})
            payload = b"ok" if status < 400 else b"receiver down for the test"
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    holder.append(Receiver(server=server))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return holder[0]
