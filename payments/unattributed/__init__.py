"""Unattributed payments (issue 14): a real rail's Pix to the platform's key naming no charge and no merchant, kept
for staff, who send it back to the payer from the admin."""
