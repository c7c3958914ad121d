"""The demo job (``make demo``): mobile-game sessions with tunnels, on Flink's semantics."""
