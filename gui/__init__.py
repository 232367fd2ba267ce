"""kvswitch's tray app (``kvswitch-tray``): switch modes and profiles in one click, watch the
clients live, run the probe and see the result. A thin Qt layer over the ``kvswitch`` library,
which never imports it."""

__all__: list[str] = []
