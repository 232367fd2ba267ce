"""Test doubles kvswitch ships: a deterministic streaming server (tests, benchmarks, demos)."""
