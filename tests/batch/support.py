"""A TCP proxy in front of the test server that loses a connection at the worst moment.

The batch writer's first ``INSERT`` either reaches the server and its answer is lost (the
server committed, the client never hears it: the outcome is unknown to the client), or
never reaches the server at all. Either way the client sees the connection die during its
statement; every connection after that one goes through untouched. A real network fault
on a real server, at a place a kill signal can only hit by chance.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Literal

Loss = Literal["answer", "statement"]


class LosingProxy:
    def __init__(self, server_port: int, lose: Loss) -> None:
        self.server_port = server_port
        self.lose = lose
        self.lost = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()
        for sock in self._open:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.server_port))
            self._open += [client, server]
            armed = not self.lost.is_set()  # only the first connection that writes loses
            drop_answer = threading.Event()
            threading.Thread(
                target=self._upstream, args=(client, server, armed, drop_answer), daemon=True
            ).start()
            threading.Thread(
                target=self._downstream, args=(server, client, drop_answer), daemon=True
            ).start()

    def _upstream(
        self, client: socket.socket, server: socket.socket, armed: bool, drop: threading.Event
    ) -> None:
        while chunk := _recv(client):
            if armed and not self.lost.is_set() and b"INSERT INTO" in chunk:
                self.lost.set()
                if self.lose == "statement":
                    _hang_up(client, server)
                    return
                drop.set()  # the server gets it; its answer is lost on the way back
            with contextlib.suppress(OSError):
                server.sendall(chunk)
        _hang_up(client, server)

    def _downstream(
        self, server: socket.socket, client: socket.socket, drop: threading.Event
    ) -> None:
        while chunk := _recv(server):
            if drop.is_set():
                _hang_up(client, server)
                return
            with contextlib.suppress(OSError):
                client.sendall(chunk)
        _hang_up(client, server)


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _hang_up(*socks: socket.socket) -> None:
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
