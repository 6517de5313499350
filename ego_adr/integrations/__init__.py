"""Thin adapters that let other tools run ego_adr's benchmark and method (lmms-eval today). They call the
layers below (data, video, reasoning, eval, run) and never copy them; nothing in the core imports them."""
