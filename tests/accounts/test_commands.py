import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import AccountEvent, KycStatus, Merchant
from integrations.models import ApiKey
from tests.conftest import basic_auth


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_createmerchant():
    output = run("createmerchant", "--email", "Shop@Example.com", "--password", "a-long-passphrase", "--name", "Shop")

    merchant = Merchant.objects.get(owner__email="shop@example.com")
    assert output.strip() == f"Merchant {merchant.id} (Shop) created, KYC NOT_SUBMITTED."
    assert merchant.owner.check_password("a-long-passphrase")


@pytest.mark.django_db
def test_createmerchant_approve_is_audited():
    run("createmerchant", "--email", "shop@example.com", "--password", "pw-pw-pw-pw", "--approve")

    merchant = Merchant.objects.get()
    assert merchant.kyc_status == KycStatus.APPROVED
    event = AccountEvent.objects.get(merchant=merchant, action="kyc_approved")
    assert (event.actor, event.from_status, event.reason) == (None, "NOT_SUBMITTED", "approved by an operator command")


@pytest.mark.django_db
def test_createmerchant_twice_fails_clearly():
    run("createmerchant", "--email", "shop@example.com", "--password", "pw-pw-pw-pw")

    with pytest.raises(CommandError, match="already exists"):
        run("createmerchant", "--email", "shop@example.com", "--password", "pw-pw-pw-pw")


@pytest.mark.django_db
def test_createapikey_prints_json_that_authenticates(client):
    run("createmerchant", "--email", "shop@example.com", "--password", "pw-pw-pw-pw", "--approve")

    printed = json.loads(run("createapikey", "--email", "shop@example.com", "--mode", "live", "--label", "erp"))

    assert set(printed) == {"publicKey", "secretKey", "mode"}
    assert printed["mode"] == "live"
    assert printed["publicKey"].startswith("pk_live_") and printed["secretKey"].startswith("sk_live_")
    assert ApiKey.objects.get().label == "erp"
    response = client.get("/account", HTTP_AUTHORIZATION=basic_auth(printed["publicKey"], printed["secretKey"]))
    assert response.status_code == 200
    assert response.json()["livemode"] is True


@pytest.mark.django_db
def test_createapikey_live_needs_approved_kyc():
    run("createmerchant", "--email", "shop@example.com", "--password", "pw-pw-pw-pw")

    with pytest.raises(CommandError, match="KYC is approved"):
        run("createapikey", "--email", "shop@example.com", "--mode", "live")


@pytest.mark.django_db
def test_createapikey_unknown_merchant():
    with pytest.raises(CommandError, match="No merchant"):
        run("createapikey", "--email", "nobody@example.com")


@pytest.mark.django_db
def test_seed_demo_is_idempotent_and_its_keys_work(client):
    first = json.loads(run("seed_demo", "--json", "--force"))
    second = json.loads(run("seed_demo", "--json", "--force"))

    assert first == second
    assert Merchant.objects.count() == 1
    assert ApiKey.objects.count() == 1
    assert Merchant.objects.get().kyc_status == KycStatus.APPROVED
    response = client.get("/account", HTTP_AUTHORIZATION=basic_auth(first["publicKey"], first["secretKey"]))
    assert response.status_code == 200
    assert response.json()["name"] == "Loja Demo"
    assert response.json()["livemode"] is False
    assert client.login(username=first["email"], password=first["password"])


@pytest.mark.django_db
def test_seed_demo_passwords_are_this_installations_own(settings):
    printed = json.loads(run("seed_demo", "--json", "--force"))
    settings.SECRET_KEY = "another installation"

    assert printed["password"] != json.loads(run("seed_demo", "--json", "--force"))["password"]
    assert "demo-password" not in printed["password"] and printed["password"] != printed["staffPassword"]


@pytest.mark.django_db
def test_seed_demo_refuses_a_production_like_setup(settings, monkeypatch):
    settings.DEBUG = False
    monkeypatch.setattr("payments.management.commands.seed_demo.development_database", lambda: False)

    with pytest.raises(CommandError, match="development setup"):
        run("seed_demo")

    assert not Merchant.objects.exists()


@pytest.mark.django_db
def test_the_readme_is_right_the_demo_owner_creates_test_keys_without_a_second_factor_but_not_live_ones(client):
    """Issue 37, item 19: the README said the demo merchant needed a second factor before any key."""
    demo = json.loads(run("seed_demo", "--json", "--force"))
    assert client.login(username=demo["email"], password=demo["password"])

    def create_key(mode: str):
        page = client.get("/dashboard/integrations/").content.decode()
        nonce = re.search(r'name="nonce" value="([^"]+)"', page).group(1)
        return client.post("/dashboard/integrations/keys/", {"label": mode, "mode": mode, "nonce": nonce})

    test_key, live_key = create_key("test"), create_key("live")
    reveal = client.post("/dashboard/webhooks/secret/reveal/")

    assert test_key.status_code == 200 and "sk_test_" in test_key.content.decode()
    assert list(ApiKey.objects.filter(label="test").values_list("livemode", flat=True)) == [False]
    assert live_key.status_code == 403 and not ApiKey.objects.filter(livemode=True).exists()
    assert "Turn on two-factor sign-in in Security before doing this." in live_key.content.decode()
    assert reveal.status_code == 403
