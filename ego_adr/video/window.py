"""The window rule, seen from the video layer. It lives in :mod:`ego_adr.data.window`: the data loader refuses what
cannot be a window before any video is opened, and data/ is below video/. The names are re-exported here."""

from ego_adr.data.window import END_TOLERANCE_S, Window, WindowError, normalise_window, window_problem

__all__ = ["END_TOLERANCE_S", "Window", "WindowError", "normalise_window", "window_problem"]
