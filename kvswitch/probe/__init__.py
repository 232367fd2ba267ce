"""kvswitch's probe: measure TTFT, ITL and GPU memory per mode, side by side (D-9)."""
