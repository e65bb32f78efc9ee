"""A small PNG reader and writer for height-field images (no imaging library needed).

:func:`read_png_grey` gives 8-bit grey levels the way MuJoCo's loader (lodepng asked
for 8-bit grey) gives them: grey images as they are, 16-bit samples by their high byte,
colour images by their red channel, alpha dropped. Interlaced and palette images are
refused.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel (grey, RGB, grey+alpha, RGBA)


class PNGError(ValueError):
    pass


def read_png_grey(data: bytes) -> np.ndarray:
    """(height, width) uint8 grey levels of a PNG file's bytes, top row first."""
    if not data.startswith(_SIGNATURE):
        raise PNGError("not a PNG file")
    header, idat = None, []
    at = len(_SIGNATURE)
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        at += 12 + length
    if header is None or not idat:
        raise PNGError("PNG file without image data")
    width, height, depth, colour, _, _, interlace = header
    if colour not in _CHANNELS or depth not in (8, 16) or interlace:
        raise PNGError(f"unsupported PNG format (colour type {colour}, bit depth {depth}, interlace {interlace}); "
                       "use 8- or 16-bit grey or RGB(A) without interlacing")
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as e:
        raise PNGError(f"corrupt PNG data: {e}") from None
    bpp = _CHANNELS[colour] * depth // 8
    stride = width * bpp
    if len(raw) < height * (stride + 1):
        raise PNGError("truncated PNG data")
    pixels = _unfilter(raw, height, stride, bpp)
    samples = pixels.reshape(height, width, _CHANNELS[colour], depth // 8)
    return np.ascontiguousarray(samples[:, :, 0, 0])  # first channel; high byte of 16-bit samples


def _unfilter(raw: bytes, height: int, stride: int, bpp: int) -> np.ndarray:
    """Undo PNG's per-scanline filters (none, sub, up, average, Paeth)."""
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=start + 1).astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 2:
            cur = (line + prev) & 0xFF
        elif kind in (1, 3, 4):
            cur = np.zeros(stride, dtype=np.int32)
            for i in range(stride):  # each byte depends on the one bpp to its left
                left = cur[i - bpp] if i >= bpp else 0
                if kind == 1:
                    pred = left
                elif kind == 3:
                    pred = (left + prev[i]) >> 1
                else:
                    up_left = prev[i - bpp] if i >= bpp else 0
                    pred = _paeth(left, prev[i], up_left)
                cur[i] = (line[i] + pred) & 0xFF
        else:
            raise PNGError(f"unknown PNG filter type {kind}")
        out[y] = cur
        prev = cur
    return out


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def write_png_grey(path, image) -> None:
    """Write (height, width) uint8 grey levels as an 8-bit grey PNG, top row first."""
    image = np.asarray(image, dtype=np.uint8)
    height, width = image.shape
    raw = b"".join(b"\x00" + image[y].tobytes() for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(_SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
