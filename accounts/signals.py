"""Signals about merchants, for the caches other apps keep of them: plumbing, never business logic (STYLE §1).

`merchant_changed` (argument `merchant_id`) is sent inside the transaction of every change that a cached merchant
may be out of date with: its KYC status, suspension, name or rate limit, and data of other apps kept with it (the
webhook endpoints, see MEMO_ATTRIBUTE). The API's key cache (integrations.authcache) receives it: it drops its copy
at once and has every other process drop theirs once the change commits. Accounts needs to know no cache."""

from django.dispatch import Signal

merchant_changed = Signal()

# A merchant object held by a long-lived cache (the API's key cache) carries a dict under this attribute, where other
# apps may keep what they derived from the merchant for as long as that cache holds it (webhooks: the enabled
# endpoints of each mode). A change to such data sends merchant_changed, like any change to the merchant itself.
MEMO_ATTRIBUTE = "_webhook_endpoints_cache"
