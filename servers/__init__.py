"""Servers the harness runs clients against (see ``servers/reference``)."""
