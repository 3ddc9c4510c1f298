from django.db import migrations


def owners_become_members(apps, schema_editor):
    Merchant = apps.get_model("accounts", "Merchant")
    Membership = apps.get_model("accounts", "Membership")
    existing = set(Membership.objects.filter(role="owner").values_list("merchant_id", flat=True))
    Membership.objects.bulk_create([
        Membership(user_id=merchant.owner_id, merchant_id=merchant.pk, role="owner", created_at=merchant.created_at)
        for merchant in Merchant.objects.exclude(pk__in=existing).only("pk", "owner_id", "created_at").iterator()
    ], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0005_teams_2fa_audit")]

    operations = [migrations.RunPython(owners_become_members, migrations.RunPython.noop)]
