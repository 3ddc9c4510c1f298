"""Kinds of field problems of a charge request (payins.validation reports them by code): a request whose every
problem is of one kind is reported as that kind's error (core.errors.validation_error)."""

from core.errors import DomainError


class AmountTooSmall(DomainError):
    code = "amount_too_small"
    message = "The amount is below the minimum for this payment method"
    validation_kind = True


class AmountTooLarge(DomainError):
    code = "amount_too_large"
    message = "The amount is above the maximum per charge"
    validation_kind = True


class LiveCardInTestMode(DomainError):
    code = "live_card_in_test_mode"
    message = "Test mode accepts only test card numbers"
    validation_kind = True


class ItemsTotalMismatch(DomainError):
    code = "items_total_mismatch"
    message = "The items do not add up to the amount"
    validation_kind = True


class RailUnavailable(DomainError):
    status_code = 502
    type = "rail_error"
    code = "rail_unavailable"
    message = "The payment network is unavailable; nothing was charged. Try again."


class RawCardDataNotAllowed(DomainError):
    """Live cards reach the rail only as its browser token: a card number sent to us is refused, never read."""

    code = "raw_card_data_not_allowed"
    message = ("Live card charges take card.token, the payment_token made in the payer's browser by Efí's library "
               "(or the hosted page: send no card); card numbers and CVVs are never accepted here")
