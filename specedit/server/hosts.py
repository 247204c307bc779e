"""Which host names mean this machine: where a server without a key is safe to listen, and
where a client may send a key over plain http."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine by its address or name: 127.0.0.0/8, ::1 (bracketed or
    not) or localhost. Any other name may resolve to anything, so it is not."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
