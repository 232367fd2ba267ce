"""kvswitch's local gateway: one address for the clients, the mode chosen per request."""
