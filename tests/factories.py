from __future__ import annotations

import factory

from accounts.models import KycStatus, Merchant, User
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


class MerchantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Merchant

    name = factory.Sequence(lambda n: f"Loja {n}")
    owner = factory.SubFactory(UserFactory)
    kyc_status = KycStatus.APPROVED


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
