import uuid

from django.db import models


class Merchant(models.Model):
    class KycStatus(models.TextChoices):
        NOT_SUBMITTED = "NOT_SUBMITTED"
        SUBMITTED = "SUBMITTED"
        APPROVED = "APPROVED"
        REJECTED = "REJECTED"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    trading_name = models.CharField(max_length=100, blank=True)
    city = models.CharField(max_length=60, blank=True)
    kyc_status = models.CharField(max_length=16, choices=KycStatus.choices, default=KycStatus.NOT_SUBMITTED)
    suspended = models.BooleanField(default=False)
    pix_fee_bps = models.PositiveIntegerField(default=99)  # 0.99%
    payout_fee = models.PositiveIntegerField(default=0)
    max_charge_amount = models.PositiveBigIntegerField(default=10_000_000)
    max_payout_amount = models.PositiveBigIntegerField(default=5_000_000)
    daily_payout_limit = models.PositiveBigIntegerField(default=20_000_000)
    created_at = models.DateTimeField(auto_now_add=True)

    # DRF puts the authenticated merchant in request.user.
    is_authenticated = True

    def __str__(self):
        return self.name


class ApiKey(models.Model):
    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="api_keys")
    public_key = models.CharField(max_length=64, unique=True)
    secret_digest = models.CharField(max_length=64)  # hex HMAC-SHA256 of the secret key
    livemode = models.BooleanField(default=False)
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return self.public_key


class Balance(models.Model):
    """The merchant's money in one mode: one row, locked by every payout."""

    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="balances")
    livemode = models.BooleanField(default=False)
    available = models.BigIntegerField(default=0)
    in_flight = models.BigIntegerField(default=0)
    payout_day = models.DateField(null=True, blank=True)
    payout_day_total = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["merchant", "livemode"], name="balance_merchant_mode"),
            models.CheckConstraint(condition=models.Q(available__gte=0), name="balance_available_not_negative"),
        ]

    def __str__(self):
        return f"{self.merchant_id}: {self.available}"


class Payin(models.Model):
    class Method(models.TextChoices):
        PIX = "PIX"
        CREDIT_CARD = "CREDIT_CARD"
        BOLETO = "BOLETO"

    class Status(models.TextChoices):
        PENDING = "PENDING"
        PAID = "PAID"
        FAILED = "FAILED"
        EXPIRED = "EXPIRED"
        CANCELED = "CANCELED"
        PARTIALLY_REFUNDED = "PARTIALLY_REFUNDED"
        REFUNDED = "REFUNDED"
        CHARGEBACK = "CHARGEBACK"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="payins")
    livemode = models.BooleanField(default=False)
    payment_method = models.CharField(max_length=16, choices=Method.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    amount = models.PositiveBigIntegerField()
    fee = models.PositiveBigIntegerField(default=0)
    refunded_amount = models.PositiveBigIntegerField(default=0)
    reference_id = models.CharField(max_length=64)
    description = models.CharField(max_length=140, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    customer = models.JSONField()
    items = models.JSONField()
    payer_ip = models.GenericIPAddressField()
    is_physical_product = models.BooleanField()
    webhook_url = models.URLField(max_length=500, blank=True)
    public_token = models.CharField(max_length=64, unique=True)
    pix_txid = models.CharField(max_length=35, unique=True, null=True, blank=True)
    pix_payload = models.TextField(blank=True)
    pix_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    failure_code = models.CharField(max_length=40, blank=True)
    failure_message = models.CharField(max_length=255, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["merchant", "livemode", "-created_at"], name="payin_merchant_created"),
            models.Index(fields=["merchant", "livemode", "reference_id"], name="payin_merchant_reference"),
        ]

    def __str__(self):
        return str(self.id)


class Payout(models.Model):
    class Status(models.TextChoices):
        PENDING = "PENDING"
        PROCESSING = "PROCESSING"
        COMPLETED = "COMPLETED"
        FAILED = "FAILED"
        CANCELED = "CANCELED"
        RETURNED = "RETURNED"

    class KeyType(models.TextChoices):
        CPF = "CPF"
        CNPJ = "CNPJ"
        EMAIL = "EMAIL"
        PHONE = "PHONE"
        EVP = "EVP"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="payouts")
    livemode = models.BooleanField(default=False)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    amount = models.PositiveBigIntegerField()
    fee = models.PositiveBigIntegerField(default=0)
    pix_key = models.CharField(max_length=77)
    pix_key_type = models.CharField(max_length=5, choices=KeyType.choices)
    reference_id = models.CharField(max_length=64)
    external_id = models.CharField(max_length=32, unique=True)
    beneficiary_name = models.CharField(max_length=120, blank=True)
    beneficiary_document = models.CharField(max_length=14, blank=True)
    description = models.CharField(max_length=140, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    webhook_url = models.URLField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    failure_code = models.CharField(max_length=40, blank=True)
    failure_message = models.CharField(max_length=255, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["merchant", "livemode", "reference_id"], name="payout_reference_unique"),
        ]
        indexes = [models.Index(fields=["merchant", "livemode", "-created_at"], name="payout_merchant_created")]

    def __str__(self):
        return str(self.id)


class LedgerEntry(models.Model):
    """One line of the merchant's statement: append-only."""

    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="ledger_entries")
    livemode = models.BooleanField(default=False)
    type = models.CharField(max_length=20)  # payin, payin_fee, payout, payout_fee, ...
    amount = models.BigIntegerField()  # signed cents
    balance_after = models.BigIntegerField()
    object_type = models.CharField(max_length=20)
    object_id = models.UUIDField()
    reference_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["merchant", "livemode", "-created_at"], name="ledger_merchant_created")]

    def __str__(self):
        return f"{self.type} {self.amount}"


class Event(models.Model):
    """A webhook event, written in the transaction of the change it reports; a worker delivers it later."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="events")
    livemode = models.BooleanField(default=False)
    type = models.CharField(max_length=40)
    payload = models.JSONField()
    delivered = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["delivered", "created_at"], name="event_undelivered")]

    def __str__(self):
        return self.type


class IdempotencyKey(models.Model):
    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE)
    livemode = models.BooleanField(default=False)
    key = models.CharField(max_length=255)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField(null=True)  # null while the first request is in progress
    response_body = models.JSONField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["merchant", "livemode", "key"], name="idempotency_key_unique"),
        ]

    def __str__(self):
        return self.key
