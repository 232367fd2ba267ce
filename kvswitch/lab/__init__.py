"""The kvswitch lab: real llama.cpp servers in both modes on this machine (an optional extra)."""
