"""Shared test helpers (not tests themselves)."""
