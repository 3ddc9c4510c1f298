"""The two-factor seeds, stored in clear by 0005, are encrypted (core/crypto.py) and the clear column dropped."""

from django.db import migrations, models

from core import crypto

SEALED = {"key_setting": "TOTP_SECRET_ENCRYPTION_KEY", "purpose": b"totp-seed", "aad": b"totp"}


def seal_seeds(apps, schema_editor):
    TotpDevice = apps.get_model("accounts", "TotpDevice")
    for device in TotpDevice.objects.all():
        device.secret_sealed = crypto.seal(device.secret, **SEALED)
        device.save(update_fields=["secret_sealed"])


def open_seeds(apps, schema_editor):
    TotpDevice = apps.get_model("accounts", "TotpDevice")
    for device in TotpDevice.objects.all():
        device.secret = crypto.unseal(device.secret_sealed, **SEALED)
        device.save(update_fields=["secret"])


class Migration(migrations.Migration):
    dependencies = [("accounts", "0007_audit_actions_unmatched_disputes")]

    operations = [
        migrations.AddField(model_name="totpdevice", name="secret_sealed",
                            field=models.CharField(default="", max_length=200), preserve_default=False),
        migrations.AlterField(model_name="totpdevice", name="secret", field=models.CharField(max_length=64,
                                                                                            default="")),
        migrations.RunPython(seal_seeds, open_seeds),
        migrations.RemoveField(model_name="totpdevice", name="secret"),
    ]
