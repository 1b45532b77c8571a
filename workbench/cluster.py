"""Ray cluster addresses, checked before any work: the form (HOST:PORT, ray://HOST:PORT,
`auto`, or `local` where a command starts its own instance), and that a Ray cluster answers at
HOST:PORT within a few seconds (it speaks gRPC: a web server or a database there is refused
too). ray.init retries an address nobody answers at for minutes; a typo or a stopped cluster
is bad input (exit 2), said in one line at once."""

from __future__ import annotations

import os
import socket

CONNECT_TIMEOUT_S = 5.0
PROBE_S = 3.0  # a GCS answers the HTTP/2 preface with its settings within milliseconds


class AddressError(ValueError):
    """An --address that is malformed or where no Ray cluster answers (exit status 2)."""


class NotRay(ConnectionError):
    """Something listens at the address, but it does not answer as Ray does."""


# the client's HTTP/2 connection preface and an empty SETTINGS frame: a gRPC server answers
# with a frame of its own, SETTINGS (type 4) first
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def check_speaks_grpc(target: tuple[str, int], timeout_s: float = PROBE_S) -> None:
    """NotRay unless HOST:PORT answers the HTTP/2 preface as a gRPC server (Ray's GCS, Ray
    Client) does: a wrong port there (a web server, a database) would otherwise hold ray.init
    for its whole time limit. With TLS (RAY_USE_TLS) a plain preface proves nothing: not
    checked."""
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        return
    host, port = target
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as conn:
            conn.settimeout(timeout_s)
            conn.sendall(_H2_PREFACE)
            head = conn.recv(9)
    except OSError as exc:  # refused, reset, silent past timeout_s
        raise NotRay(
            f"{host}:{port} does not answer as a Ray cluster does ({exc.strerror or exc or 'no answer'})"
        ) from None
    if len(head) < 4 or head[3] != 4:
        raise NotRay(f"{host}:{port} does not answer as a Ray cluster does (not gRPC)")


def host_port(address: str | None) -> tuple[str, int] | None:
    """(HOST, PORT) of HOST:PORT or ray://HOST:PORT; None for auto, local or no address."""
    if not address or address in ("auto", "local"):
        return None
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    return (host.strip("[]"), int(port)) if host and port.isdigit() else None


def check_address(
    address: str, flag: str = "--address", allow_local: bool = False, timeout_s: float = CONNECT_TIMEOUT_S
) -> None:
    """Raises AddressError unless `address` is `auto` (a cluster started on this machine, found
    by Ray), `local` (when the command starts one itself: `allow_local`) or HOST:PORT (also
    ray://HOST:PORT) with a Ray cluster (a gRPC server) answering there."""
    text = address.strip()
    if text == "auto" or (allow_local and text == "local"):
        return
    hostport = text.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    forms = "HOST:PORT (or ray://HOST:PORT, or auto" + (", or local)" if allow_local else ")")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in host):
        raise AddressError(f"{flag} must look like {forms}, got {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise AddressError(
            f"{flag} {address}: cannot reach a Ray cluster there ({exc.strerror or exc})"
        ) from None
    try:
        check_speaks_grpc((host.strip("[]"), int(port)))
    except NotRay as exc:
        raise AddressError(f"{flag} {address}: {exc}") from None
