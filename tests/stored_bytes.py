"""What a store keeps, read as it is kept: every key of a Redis / FalkorDB server over its socket, every file
under a folder, with the LZF-compressed strings of Redis's RDB format (snapshots, the AOF's base, DUMP replies)
decompressed, so that a search for a text finds it wherever it is."""

from __future__ import annotations

from pathlib import Path

import lzf  # python-lzf: liblzf, the compression Redis applies to strings of more than 20 bytes
import redis

RDB_LZF = 0xC3  # an RDB string encoded as LZF: this byte, the compressed length, the plain length, the bytes
MOST_PLAIN_BYTES = 1 << 26


def readable(data: bytes) -> list[bytes]:
    """The bytes as stored, and every LZF-compressed RDB string in them, decompressed."""
    found = [data]
    at = data.find(RDB_LZF)
    while at >= 0:
        plain = _lzf_string(data, at + 1)
        if plain is not None:
            found.append(plain)
        at = data.find(RDB_LZF, at + 1)
    return found


def _lzf_string(data: bytes, at: int) -> bytes | None:
    compressed = _length(data, at)
    plain = _length(data, compressed[1]) if compressed else None
    if not compressed or not plain or not 0 < plain[0] < MOST_PLAIN_BYTES or plain[1] + compressed[0] > len(data):
        return None
    try:
        out = lzf.decompress(data[plain[1]:plain[1] + compressed[0]], plain[0])
    except ValueError:
        return None
    return out if out is not None and len(out) == plain[0] else None


def _length(data: bytes, at: int) -> tuple[int, int] | None:
    """An RDB length at `at`: (the length, where what follows starts), or None where none is."""
    if at >= len(data):
        return None
    first, kind = data[at], data[at] >> 6
    if kind == 0:
        return first & 0x3F, at + 1
    if kind == 1 and at + 1 < len(data):
        return ((first & 0x3F) << 8) | data[at + 1], at + 2
    if first in (0x80, 0x81):
        width = 4 if first == 0x80 else 8
        return int.from_bytes(data[at + 1:at + 1 + width], "big"), at + 1 + width
    return None


def server_values(socket_path: str) -> dict[bytes, list[bytes]]:
    """Every key of the server and what it holds, read over its socket as a client would (a module's value, such
    as a graph, by DUMP), readable."""
    client = redis.Redis(unix_socket_path=socket_path)
    values: dict[bytes, list[bytes]] = {}
    try:
        for key in client.scan_iter(count=1000):
            kind = client.type(key)
            if kind == b"string":
                raw = [client.get(key)]
            elif kind == b"list":
                raw = client.lrange(key, 0, -1)
            elif kind == b"hash":
                raw = [b" ".join(pair) for pair in client.hgetall(key).items()]
            elif kind == b"set":
                raw = list(client.smembers(key))
            elif kind == b"zset":
                raw = client.zrange(key, 0, -1)
            elif kind == b"stream":
                raw = [repr(entry).encode() for entry in client.xrange(key)]
            else:
                raw = [client.dump(key)]
            values[key] = [part for value in raw for part in readable(value or b"")]
    finally:
        client.close()
    return values


def files_holding(folder: Path, needles: list[bytes], allowed: tuple[bytes, ...] = ()) -> dict[str, list[bytes]]:
    """The files under the folder (compressed strings decompressed) holding any of the needles (case folded;
    the `allowed` look-alikes that contain one taken out first), with the needles each holds."""
    found = {}
    for path in Path(folder).rglob("*"):
        if path.is_file():
            held = _held(readable(path.read_bytes()), needles, allowed)
            if held:
                found[str(path)] = held
    return found


def keys_holding(socket_path: str, needles: list[bytes], allowed: tuple[bytes, ...] = ()) -> dict[bytes, list[bytes]]:
    """The server's keys holding any of the needles (as files_holding), with the needles each holds."""
    found = {}
    for key, parts in server_values(socket_path).items():
        held = _held(parts, needles, allowed)
        if held:
            found[key] = held
    return found


def _held(parts: list[bytes], needles: list[bytes], allowed: tuple[bytes, ...]) -> list[bytes]:
    lowered = []
    for part in parts:
        part = part.lower()
        for look_alike in allowed:
            part = part.replace(look_alike.lower(), b"")
        lowered.append(part)
    return [needle for needle in needles if any(needle.lower() in part for part in lowered)]
