"""Live use: the online :class:`~evalstop.live.monitor.Monitor` and its JSON state codec.

Imports only the core.
"""
