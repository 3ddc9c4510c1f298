"""Issue 37, item 2 in a real browser: the Security page's QR code renders (segno's inline SVG had no xmlns, so as a
data: image it was broken, naturalWidth 0, and everyone had to type the 32-character key), and what it encodes is the
otpauth:// URI an authenticator app needs: the issuer, the account, the key shown beside it. A phone's camera is
played by zxing-cpp reading the pixels Chromium drew, and the app set up from that scan turns two-factor sign-in on."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

import pyotp
import pytest
import zxingcpp
from playwright.sync_api import Page, expect

from tests.e2e.helpers import MOBILE, log_in, shot
from tests.factories import MerchantFactory, UserFactory

pytestmark = pytest.mark.browser

EMAIL = "ana+2fa@lojadaana.com.br"

# The image as Chromium drew it, in grey levels, row by row (a canvas is a browser's own copy of the pixels).
_PIXELS = """(img) => {
  const canvas = document.createElement("canvas");
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const context = canvas.getContext("2d");
  context.fillStyle = "#fff"; context.fillRect(0, 0, canvas.width, canvas.height);
  context.drawImage(img, 0, 0);
  const rgba = context.getImageData(0, 0, canvas.width, canvas.height).data, grey = [];
  for (let i = 0; i < rgba.length; i += 4) grey.push(Math.round((rgba[i] + rgba[i + 1] + rgba[i + 2]) / 3));
  return {width: canvas.width, height: canvas.height, grey: grey};
}"""


def scan(page: Page, name: str) -> str:
    """What a camera reads from the image named `name`: the one QR code's text."""
    image = page.get_by_role("img", name=name)
    expect(image).to_be_visible()
    assert image.evaluate("(img) => img.complete && img.naturalWidth > 0 && img.naturalHeight > 0")
    drawn = image.evaluate(_PIXELS)
    pixels = memoryview(bytes(drawn["grey"])).cast("B", (drawn["height"], drawn["width"]))
    codes = zxingcpp.read_barcodes(pixels, formats=zxingcpp.BarcodeFormat.QRCode)
    assert len(codes) == 1, f"{len(codes)} QR codes read"
    return codes[0].text


def test_the_authenticator_qr_code_renders_and_scans_to_the_otpauth_uri(page, server):
    merchant = MerchantFactory(name="Loja da Ana", owner=UserFactory(email=EMAIL), owner_two_factor=False)
    log_in(page, merchant.owner.email)
    page.get_by_role("link", name="Security", exact=True).click()
    typed_key = page.get_by_test_id("totp-secret").inner_text().strip()

    uri = scan(page, "QR code for your authenticator app")

    parts = urlsplit(uri)
    assert (parts.scheme, parts.netloc) == ("otpauth", "totp")
    assert unquote(parts.path) == f"/Pagamentos:{EMAIL}"
    assert parse_qs(parts.query) == {"secret": [typed_key], "issuer": ["Pagamentos"]}
    shot(page, "security-enrol-qr")
    page.set_viewport_size(MOBILE)
    assert scan(page, "QR code for your authenticator app") == uri  # the same code on a phone's screen

    # The app that scanned it makes the code that turns two-factor sign-in on.
    page.get_by_label("Code").fill(pyotp.parse_uri(uri).now())
    page.get_by_role("button", name="Turn on").click()
    expect(page.get_by_role("alert").filter(has_text="Two-factor sign-in is on.")).to_be_visible()
