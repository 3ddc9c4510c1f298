"""Unmatched payments (issue 14): money that reached the rail without settling a PENDING charge exactly."""
