"""PyFlink's ``pyflink.datastream.formats``: value formats of sources (``formats.json``)."""

from __future__ import annotations

__all__: list[str] = []
