"""What the rails tell us: their notifications (a public route per real rail) and reconciliation (asking them what
the notifications may have missed). Nothing a rail says is believed until the rail confirms it."""
