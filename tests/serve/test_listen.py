"""The listening socket of ``toolplug serve --http``: what each connection inherits."""

from __future__ import annotations

import socket

from toolplug.serve._address import listen as _listen


def test_each_connection_sends_without_waiting_for_acks() -> None:
    """TCP_NODELAY on every accepted connection: without it each answer waited on Nagle's
    algorithm and the client's delayed ACK (asyncio sets it only where ``proto`` says TCP,
    which ``socket.create_server`` leaves 0)."""
    listener = _listen("127.0.0.1", 0)
    try:
        client = socket.create_connection(listener.getsockname()[:2], timeout=10)
        accepted, _ = listener.accept()
        with client, accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        listener.close()
