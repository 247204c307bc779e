"""`specedit serve` (app.py and what it runs on) and the `--server` client (client.py), which
share one wire schema (protocol.py). Only client.py and protocol.py load without fastapi."""
