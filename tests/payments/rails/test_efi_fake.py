"""The fake Efí Pix API behaves as the client's tests assume: mutual TLS, OAuth2, cob, received Pix, devoluções,
sends, webhooks and notifications, fault injection. Talks to it over real HTTPS with `requests`, as the client does."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from payments.formats.pix import parse
from tests.payments.rails.efi_fake import (
    CLIENT_COMMON_NAME,
    ERROR_BASE,
    Certificates,
    FakeEfi,
    from_cents,
    rfc3339,
    to_cents,
)

TXID = "TxidDeTeste0000000000000001"


class Receiver:
    """A plain-HTTP endpoint on 127.0.0.1 that stands in for the service's webhook view and keeps what it got."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str, Any]] = []  # (path with query, content type, parsed body)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.received.append((self.path, self.headers.get("Content-Type"), json.loads(raw)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/efi/webhook"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Client:
    """The least client that speaks to the fake: a token, our certificate and the fake's CA, kept-alive connections.

    trust_env=False: otherwise REQUESTS_CA_BUNDLE from the environment silently replaces the Session's verify.
    """

    def __init__(self, efi: FakeEfi, certificates: Certificates) -> None:
        self.efi = efi
        self.certificates = certificates
        self.token: str | None = None
        self.session = requests.Session()
        self.session.trust_env = False
        self.session.cert = str(certificates.client_file)
        self.session.verify = str(certificates.ca_file)

    def fetch_token(self, secret: str | None = None, grant_type: str = "client_credentials") -> requests.Response:
        return self.session.post(f"{self.efi.url}/oauth/token", json={"grant_type": grant_type}, timeout=5,
                                 auth=(self.efi.client_id, secret or self.efi.client_secret))

    def call(self, method: str, path: str, body: Any = None, *, timeout: float = 5,
             **kwargs: Any) -> requests.Response:
        if self.token is None:
            self.token = self.fetch_token().json()["access_token"]
        headers = {"Authorization": f"Bearer {self.token}", **kwargs.pop("headers", {})}
        return self.session.request(method, self.efi.url + path, json=body, headers=headers, timeout=timeout,
                                    **kwargs)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return Certificates(tmp_path_factory.mktemp("efi-certificates"))


@pytest.fixture
def efi(certificates: Certificates) -> Iterator[FakeEfi]:
    with FakeEfi(certificates) as fake:
        yield fake
    assert fake.errors == [], "the fake itself raised"


@pytest.fixture
def client(efi: FakeEfi, certificates: Certificates) -> Iterator[Client]:
    client = Client(efi, certificates)
    yield client
    client.session.close()


@pytest.fixture
def receiver(efi: FakeEfi) -> Iterator[Receiver]:
    receiver = Receiver()
    efi.set_webhook(receiver.url)
    yield receiver
    receiver.stop()


def cob_body(efi: FakeEfi, amount: str = "150.00", **extra: Any) -> dict[str, Any]:
    return {"calendario": {"expiracao": 3600}, "valor": {"original": amount}, "chave": efi.pix_key, **extra}


def send_body(efi: FakeEfi, key: str = "someone@example.com", amount: str = "12.34") -> dict[str, Any]:
    return {"valor": amount, "pagador": {"chave": efi.pix_key, "infoPagador": "Saque"},
            "favorecido": {"chave": key}}


def test_certificates_are_quick_and_hold_certificate_and_key_in_one_file(tmp_path: Path) -> None:
    started = time.monotonic()
    certificates = Certificates(tmp_path)
    assert time.monotonic() - started < 1
    for pem in (certificates.client_file, certificates.stranger_file, certificates.server_file):
        text = pem.read_text()
        assert "BEGIN CERTIFICATE" in text and "BEGIN PRIVATE KEY" in text
    assert "PRIVATE KEY" not in certificates.ca_file.read_text()


def test_amount_and_time_helpers() -> None:
    assert to_cents("150.00") == 15000 and to_cents("0.01") == 1
    assert from_cents(15000) == "150.00" and from_cents(5) == "0.05"
    with pytest.raises(ValueError):
        to_cents("150.0")


def test_oauth_token_and_bearer(efi: FakeEfi, client: Client) -> None:
    response = client.fetch_token()
    assert response.status_code == 200
    body = response.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600 and "gn.pix.send.write" in body["scope"]
    assert client.fetch_token(secret="wrong").json()["error"] == "invalid_client"
    assert client.fetch_token(grant_type="password").status_code == 401
    assert efi.token_requests == 3

    anonymous = requests.get(f"{efi.url}/v2/cob/{TXID}", cert=str(client.certificates.client_file),
                             verify=str(client.certificates.ca_file), timeout=5)
    assert anonymous.status_code == 401
    assert anonymous.json()["type"] == ERROR_BASE + "AcessoNegado"

    first, second = client.call("GET", f"/v2/cob/{TXID}"), client.call("GET", f"/v2/cob/{TXID}")
    assert first.status_code == 404 and first.json()["type"] == ERROR_BASE + "CobNaoEncontrado"
    assert first.headers["X-Request-Id"] != second.headers["X-Request-Id"]

    log = efi.requests_log
    assert [entry["authorization_scheme"] for entry in log] == ["Basic"] * 3 + [None, "Basic", "Bearer", "Bearer"]
    assert {entry["client_cert_cn"] for entry in log} == {CLIENT_COMMON_NAME}
    assert client.token not in json.dumps(log)


def test_expired_tokens_are_refused(efi: FakeEfi, client: Client) -> None:
    assert client.call("GET", f"/v2/cob/{TXID}").status_code == 404
    efi.expire_tokens()
    assert client.call("GET", f"/v2/cob/{TXID}").status_code == 401
    client.token = None
    assert client.call("GET", f"/v2/cob/{TXID}").status_code == 404
    efi.advance_clock(3601)
    assert client.call("GET", f"/v2/cob/{TXID}").status_code == 401


def test_connections_without_our_certificate_fail_the_handshake(efi: FakeEfi, certificates: Certificates) -> None:
    for cert in (None, str(certificates.stranger_file)):
        with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)):
            requests.post(f"{efi.url}/oauth/token", auth=("client-id", "client-secret"),
                          json={"grant_type": "client_credentials"}, cert=cert, verify=str(certificates.ca_file),
                          timeout=5)
    assert efi.token_requests == 0 and efi.requests_log == []


def test_cob_pay_notify_and_read_the_pix(efi: FakeEfi, client: Client, receiver: Receiver) -> None:
    registered = client.call("PUT", f"/v2/webhook/{efi.pix_key}", {"webhookUrl": receiver.url + "?ignorar="},
                             headers={"x-skip-mtls-checking": "true"})
    assert registered.status_code == 200 and registered.json()["webhookUrl"] == receiver.url + "?ignorar="
    assert efi.webhook_skip_mtls_checking[efi.pix_key] == "true"
    assert client.call("GET", f"/v2/webhook/{efi.pix_key}").json()["chave"] == efi.pix_key
    assert client.call("PUT", "/v2/webhook/other@example.com", {"webhookUrl": receiver.url}).status_code == 400

    created = client.call("PUT", f"/v2/cob/{TXID}", cob_body(efi, devedor={"cpf": "12345678909", "nome": "Fulano"},
                                                             solicitacaoPagador="Pedido 1"))
    assert created.status_code == 201
    cob = created.json()
    assert cob["status"] == "ATIVA" and cob["revisao"] == 0 and cob["valor"] == {"original": "150.00"}
    assert cob["location"] == cob["loc"]["location"] and cob["loc"]["tipoCob"] == "cob"
    brcode = parse(cob["pixCopiaECola"])
    assert brcode["26"]["25"] == cob["location"] and brcode["54"] == "150.00" and brcode["62"]["05"] == "***"
    assert client.call("GET", f"/v2/cob/{TXID}").json() == cob

    duplicate = client.call("PUT", f"/v2/cob/{TXID}", cob_body(efi))
    assert duplicate.status_code == 400 and duplicate.json()["title"] == "Cobrança já existe"
    short = client.call("PUT", "/v2/cob/short", cob_body(efi)).json()
    assert short["type"] == ERROR_BASE + "CobOperacaoInvalida" and short["violacoes"][0]["propriedade"] == "txid"
    invalid = client.call("PUT", f"/v2/cob/{TXID}X", cob_body(efi, amount="0.00", chave="other@example.com")).json()
    assert {v["propriedade"] for v in invalid["violacoes"]} == {"valor.original", "chave"}

    e2eid = efi.pay(TXID)
    assert receiver.received == [("/efi/webhook?ignorar=/pix", "application/json",
                                  {"pix": [efi.pix_view(e2eid)]})]
    assert efi.deliveries[-1]["status"] == 200

    paid = client.call("GET", f"/v2/cob/{TXID}").json()
    assert paid["status"] == "CONCLUIDA" and [pix["endToEndId"] for pix in paid["pix"]] == [e2eid]
    pix = client.call("GET", f"/v2/pix/{e2eid}").json()
    assert pix["txid"] == TXID and pix["valor"] == "150.00" and pix["chave"] == efi.pix_key
    assert pix["pagador"] == {"cpf": "12345678909", "nome": "Pagador Teste"} and "devolucoes" not in pix
    assert len(e2eid) == 32 and e2eid.startswith("E")
    assert client.call("GET", "/v2/pix/E000").json()["type"] == ERROR_BASE + "PixNaoEncontrado"

    removal = client.call("PATCH", f"/v2/cob/{TXID}", {"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"})
    assert removal.status_code == 400 and "ATIVA" in removal.json()["detail"]


def test_cob_removal_and_expiry(efi: FakeEfi, client: Client) -> None:
    client.call("PUT", f"/v2/cob/{TXID}", cob_body(efi))
    removed = client.call("PATCH", f"/v2/cob/{TXID}", {"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"})
    assert removed.status_code == 200 and removed.json()["status"] == "REMOVIDA_PELO_USUARIO_RECEBEDOR"
    with pytest.raises(ValueError):
        efi.pay(TXID)
    assert client.call("PATCH", "/v2/cob/" + "Z" * 26, {"status": "REMOVIDA_PELO_USUARIO_RECEBEDOR"}).status_code == 404

    client.call("PUT", "/v2/cob/" + "E" * 26, {**cob_body(efi), "calendario": {"expiracao": 60}})
    efi.advance_clock(61)
    assert client.call("GET", "/v2/cob/" + "E" * 26).json()["status"] == "REMOVIDA_PELO_PSP"
    assert efi.cobs["E" * 26]["status"] == "REMOVIDA_PELO_PSP"


def test_devolucao_settles_and_notifies(efi: FakeEfi, client: Client, receiver: Receiver) -> None:
    e2eid = efi.receive(10000, txid=None)
    assert "txid" not in efi.received[e2eid]
    created = client.call("PUT", f"/v2/pix/{e2eid}/devolucao/D1", {"valor": "40.00"})
    assert created.status_code == 201
    refund = created.json()
    assert refund["status"] == "EM_PROCESSAMENTO" and refund["rtrId"].startswith("D") and len(refund["rtrId"]) == 32
    again = client.call("PUT", f"/v2/pix/{e2eid}/devolucao/D1", {"valor": "40.00"})
    assert again.status_code == 201 and again.json() == refund
    too_much = client.call("PUT", f"/v2/pix/{e2eid}/devolucao/D2", {"valor": "60.01"})
    assert too_much.status_code == 400 and too_much.json()["type"] == ERROR_BASE + "PixDevolucaoInvalida"
    assert client.call("PUT", "/v2/pix/E404/devolucao/D1", {"valor": "1.00"}).status_code == 404

    assert efi.settle() == 1
    settled = client.call("GET", f"/v2/pix/{e2eid}/devolucao/D1").json()
    assert settled["status"] == "DEVOLVIDO" and "liquidacao" in settled["horario"]
    notified = receiver.received[-1][2]["pix"][0]
    assert notified["endToEndId"] == e2eid and notified["devolucoes"][0]["status"] == "DEVOLVIDO"
    assert client.call("GET", f"/v2/pix/{e2eid}").json()["devolucoes"] == [settled]

    efi.refunds_fail = True
    client.call("PUT", f"/v2/pix/{e2eid}/devolucao/D2", {"valor": "60.00"})
    efi.settle()
    failed = client.call("GET", f"/v2/pix/{e2eid}/devolucao/D2").json()
    assert failed["status"] == "NAO_REALIZADO" and failed["motivo"]
    assert client.call("PUT", f"/v2/pix/{e2eid}/devolucao/D3", {"valor": "60.00"}).status_code == 201
    assert client.call("GET", f"/v2/pix/{e2eid}/devolucao/D9").status_code == 404


def test_send_is_made_once_per_id_envio(efi: FakeEfi, client: Client, receiver: Receiver) -> None:
    created = client.call("PUT", "/v3/gn/pix/payout1", send_body(efi))
    assert created.status_code == 201
    assert created.json()["status"] == "EM_PROCESSAMENTO" and created.json()["valor"] == "12.34"
    repeated = client.call("PUT", "/v3/gn/pix/payout1", send_body(efi))
    assert repeated.status_code == 409
    assert repeated.json()["title"] == "idEnvio já utilizado" and repeated.json()["type"].endswith("EnvioDuplicado")
    assert efi.send_attempts["payout1"] == 2 and efi.sends_created["payout1"] == 1 and len(efi.sends) == 1

    read = client.call("GET", "/v2/gn/pix/enviados/id-envio/payout1").json()
    assert read["endToEndId"] == created.json()["e2eId"] and read["chave"] == "someone@example.com"
    assert read["status"] == "EM_PROCESSAMENTO"
    assert client.call("GET", "/v2/gn/pix/enviados/id-envio/nope").json()["type"].endswith("EnvioNaoEncontrado")
    wrong_payer = {**send_body(efi), "pagador": {"chave": "other@example.com"}}
    assert client.call("PUT", "/v3/gn/pix/payout2", wrong_payer).status_code == 400

    client.call("PUT", "/v3/gn/pix/payout3", send_body(efi, key="closed@fail.example.com"))
    assert efi.settle() == 2
    assert client.call("GET", "/v2/gn/pix/enviados/id-envio/payout1").json()["status"] == "REALIZADO"
    failed = client.call("GET", "/v2/gn/pix/enviados/id-envio/payout3").json()
    assert failed["status"] == "NAO_REALIZADO" and failed["motivo"] == "Conta do recebedor encerrada"
    items = [body["pix"][0] for _, _, body in receiver.received]
    assert [(item["gnExtras"]["idEnvio"], item["status"], item["tipo"]) for item in items] == [
        ("payout1", "REALIZADO", "SOLICITACAO"), ("payout3", "NAO_REALIZADO", "SOLICITACAO")]


def test_automatic_settlement_and_dropped_notifications(efi: FakeEfi, client: Client, receiver: Receiver) -> None:
    efi.auto_settle_seconds = 0.05
    efi.drop_notifications = True
    client.call("PUT", "/v3/gn/pix/auto1", send_body(efi))
    deadline = time.monotonic() + 3
    while not efi.deliveries and time.monotonic() < deadline:
        time.sleep(0.01)
    assert efi.sends["auto1"]["status"] == "REALIZADO"
    assert efi.deliveries[0]["dropped"] is True and receiver.received == []


def test_fault_before_after_and_hang(efi: FakeEfi, client: Client) -> None:
    efi.fail_next("PUT", "/v3/gn/pix/", mode="before", status=503)
    before = client.call("PUT", "/v3/gn/pix/f1", send_body(efi))
    assert before.status_code == 503 and before.json()["type"] == ERROR_BASE + "ErroInternoDoServidor"
    assert efi.sends == {}

    efi.fail_next("PUT", "/v3/gn/pix/", mode="after")
    assert client.call("PUT", "/v3/gn/pix/f1", send_body(efi)).status_code == 500
    assert efi.sends["f1"]["status"] == "EM_PROCESSAMENTO"
    assert client.call("PUT", "/v3/gn/pix/f1", send_body(efi)).status_code == 409
    assert efi.sends_created["f1"] == 1

    efi.fail_next("PUT", "/v3/gn/pix/", mode="hang", seconds=0.5)
    with pytest.raises(requests.exceptions.ReadTimeout):
        client.call("PUT", "/v3/gn/pix/f2", send_body(efi), timeout=0.2)
    deadline = time.monotonic() + 3
    while "f2" not in efi.sends and time.monotonic() < deadline:
        time.sleep(0.01)
    assert efi.sends_created["f2"] == 1
    assert client.call("PUT", "/v3/gn/pix/f3", send_body(efi)).status_code == 201  # the fault was used up


def test_received_pix_list_is_paged_and_ordered(efi: FakeEfi, client: Client) -> None:
    start = efi.now() - timedelta(seconds=1)
    e2eids = [efi.receive(100 + index) for index in range(5)]
    end = efi.now() + timedelta(seconds=1)
    pages = []
    for page in range(3):
        response = client.call("GET", "/v2/pix", params={
            "inicio": rfc3339(start), "fim": rfc3339(end), "paginacao.paginaAtual": page,
            "paginacao.itensPorPagina": 2}).json()
        assert response["parametros"]["paginacao"] == {"paginaAtual": page, "itensPorPagina": 2,
                                                       "quantidadeDePaginas": 3, "quantidadeTotalDeItens": 5}
        pages.append([pix["endToEndId"] for pix in response["pix"]])
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [e2eid for page in pages for e2eid in page] == e2eids
    later = client.call("GET", "/v2/pix", params={"inicio": rfc3339(end), "fim": rfc3339(end)}).json()
    assert later["pix"] == [] and later["parametros"]["paginacao"]["itensPorPagina"] == 100
    missing = client.call("GET", "/v2/pix", params={"inicio": rfc3339(start)})
    assert missing.status_code == 400 and missing.json()["violacoes"][0]["propriedade"] == "fim"
