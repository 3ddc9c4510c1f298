from __future__ import annotations

import time

import factory
import pyotp
from django.utils import timezone

from accounts.models import KycStatus, Membership, Merchant, Role, TotpDevice, User
from integrations import keys
from integrations.models import ApiKey


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"merchant{n}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "correct-horse-battery")

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()

    @factory.post_generation
    def two_factor(obj, create, extracted, **kwargs):
        """Staff have a second factor unless told otherwise (the admin requires one): `two_factor=False`."""
        if create and (extracted if extracted is not None else obj.is_staff):
            totp_enrol(obj)


def totp_enrol(user: User) -> TotpDevice:
    """A confirmed authenticator for the user, as if enrolled on the Security page."""
    return TotpDevice.objects.create(user=user, secret=pyotp.random_base32(32), confirmed_at=timezone.now())


def totp_code(user: User) -> str:
    """A code the user's authenticator shows that has not been used yet (codes are single-use per 30 s step): the
    current step's, or the next one's when it was used. Never the previous step's: the server may have moved on to
    the next step by the time it checks, and one step back from there is out of its window (a flaky sign-in)."""
    device = TotpDevice.objects.get(user=user)
    totp = pyotp.TOTP(device.secret)
    while (now := totp.timecode(timezone.now())) + 1 <= device.last_step:  # both used: wait, as a person would
        time.sleep(0.5)
    return totp.generate_otp(max(now, device.last_step + 1))


class MerchantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Merchant
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Loja {n}")
    owner = factory.SubFactory(UserFactory)
    kyc_status = KycStatus.APPROVED

    @factory.post_generation
    def owner_membership(obj, create, extracted, **kwargs):
        if create:
            Membership.objects.get_or_create(user=obj.owner, merchant=obj, defaults={"role": Role.OWNER})

    @factory.post_generation
    def owner_two_factor(obj, create, extracted, **kwargs):
        """The owner has a second factor unless told otherwise (`owner_two_factor=False`): dashboard tests of payouts,
        refunds and secrets need one, as a real owner does."""
        if create and extracted is not False and not TotpDevice.objects.filter(user=obj.owner).exists():
            totp_enrol(obj.owner)


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    merchant = factory.SubFactory(MerchantFactory)
    role = Role.VIEWER


class ApiKeyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ApiKey

    merchant = factory.SubFactory(MerchantFactory)
    livemode = False
    label = "tests"
    public_key = ""
    secret_digest = ""
    secret_last4 = ""

    @classmethod
    def with_secret(cls, **kwargs) -> tuple[ApiKey, str]:
        """A key pair made the way the service makes them, with its secret (which only the caller ever sees)."""
        pair = keys.generate_pair(livemode=kwargs.get("livemode", False))
        api_key = cls(public_key=pair.public_key, secret_digest=keys.secret_digest(pair.secret_key),
                      secret_last4=pair.secret_key[-4:], **kwargs)
        return api_key, pair.secret_key


def items_totalling(amount) -> list[dict]:
    """Items of a charge that add up to `amount` (POST /payin refuses others): two mugs at half the amount, and one
    cent of postage when it is odd. Anything but an integer amount (a test of amount's own rule) gets one item."""
    if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
        return [{"title": "Caneca", "quantity": 2, "unitPrice": 2500}]
    items = [{"title": "Caneca", "quantity": 2, "unitPrice": amount // 2}]
    if amount % 2:
        items.append({"title": "Frete", "quantity": 1, "unitPrice": 1})
    return items
