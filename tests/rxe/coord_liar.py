#!/usr/bin/env python3
"""A node that lies about its set-up data, for tests/rxe/run.sh.

    coord_liar.py LISTEN_HOST:PORT UPSTREAM_HOST:PORT MODE

Sits between one node of `tensorverbs serve` and node 0's coordinator
(testbed/coord.c's line protocol) and passes every line through, except
the first all-gather piece the node sends ("AG <seq> <hex>": the start of
its set-up blob), which it changes as MODE says:

    truncate   the blob's last byte dropped (a length that cannot be right)
    magic      the blob's first byte flipped (not a blob of ours)
    handle     byte 16 flipped: the first memory or partition handle
    endpoint   byte OFFSET:VALUE set, e.g. endpoint:91:1 (a QP endpoint)

Node 0 must refuse the lie naming the node and the field, and stop the
run (both nodes exit 1).  One connection; ends when either side closes.
The lie is printed on stderr as "coord_liar: MODE: AG seq S, N -> M bytes".
"""
import socket
import sys
import threading


def addr(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


def lie(mode, line, state):
    """The changed AG line (bytes without the newline), once."""
    if state["done"] or not line.startswith(b"AG "):
        return line
    _, seq, hexs = line.split(b" ", 2)
    blob = bytearray(bytes.fromhex(hexs.decode()))
    n = len(blob)
    if mode == "truncate":
        # Only the last piece holds the last byte: drop it from this one
        # when it is the only piece (set-up blobs here are small).
        del blob[-1]
    elif mode == "magic":
        blob[0] ^= 0x01
    elif mode == "handle":
        blob[16] ^= 0x80
    elif mode.startswith("endpoint:"):
        _, off, val = mode.split(":")
        blob[int(off)] = int(val) & 0xFF
    else:
        sys.exit("coord_liar: unknown mode " + mode)
    state["done"] = True
    print("coord_liar: %s: AG seq %s, %d -> %d bytes"
          % (mode, seq.decode(), n, len(blob)), file=sys.stderr, flush=True)
    return b"AG " + seq + b" " + blob.hex().encode()


def pump(src, dst, edit):
    buf = b""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                dst.sendall(edit(line) + b"\n")
    except OSError:
        pass
    for s in (dst, src):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    listen, upstream, mode = addr(sys.argv[1]), addr(sys.argv[2]), sys.argv[3]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(listen)
    srv.listen(1)
    srv.settimeout(120)
    node, _ = srv.accept()
    # Node 0 may not listen yet: try for up to 60 s, as a node would.
    for _ in range(300):
        try:
            up = socket.create_connection(upstream, timeout=5)
            break
        except OSError:
            threading.Event().wait(0.2)
    else:
        sys.exit("coord_liar: cannot reach node 0 at %s:%d" % upstream)
    up.settimeout(None)
    state = {"done": False}
    back = threading.Thread(target=pump, args=(up, node, lambda l: l))
    back.start()
    pump(node, up, lambda l: lie(mode, l, state))
    back.join()
    if not state["done"]:
        sys.exit("coord_liar: the node sent no set-up data")


if __name__ == "__main__":
    main()
