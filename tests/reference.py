"""Float64 numpy references for the mip filters (written independently of the shaders).

Box: destination texel j of an axis going from n to m texels is the exact area average of
the base interval [j*n/m, (j+1)*n/m). Kaiser and Lanczos: separable radius-3 kernels scaled
by the ratio between consecutive levels, chained level to level, taps outside the image
resolved by the wrap mode. Colour is filtered in linear light for sRGB data; weighted
alpha averages colour by alpha, plain average where all alpha is zero.
"""

from __future__ import annotations

import math

import numpy as np


def srgb_to_linear(v):
    v = np.asarray(v, np.float64)
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(v):
    v = np.clip(np.asarray(v, np.float64), 0, 1)
    return np.where(v <= 0.0031308, v * 12.92, 1.055 * v ** (1 / 2.4) - 0.055)


def level_size(w, h, level):
    return max(1, w >> level), max(1, h >> level)


def box_matrix(n, m):
    """(m, n) matrix of area weights, rows summing to 1."""
    M = np.zeros((m, n))
    for j in range(m):
        lo, hi = j * n / m, (j + 1) * n / m
        for t in range(math.floor(lo), math.ceil(hi)):
            M[j, t] = min(t + 1, hi) - max(t, lo)
    return M / M.sum(axis=1, keepdims=True)


def _sinc(x):
    return np.sinc(x)


def kernel(name, t):
    t = np.asarray(t, np.float64)
    inside = np.abs(t) < 3
    if name == "lanczos":
        k = _sinc(t) * _sinc(t / 3)
    elif name == "kaiser":
        r = t / 3
        k = _sinc(t) * np.i0(4 * np.sqrt(np.clip(1 - r * r, 0, None))) / np.i0(4)
    elif name == "triangle":  # the tent: 1 at the centre, falling linearly to 0 one texel away
        k = np.clip(1 - np.abs(t), 0, None)
    else:
        raise ValueError(f"no reference for filter {name!r}")
    return np.where(inside, k, 0.0)


def wrap(t, n, mode):
    if mode == "repeat":
        return t % n
    if mode == "mirror":
        m = t % (2 * n)
        return np.where(m >= n, 2 * n - 1 - m, m)
    return np.clip(t, 0, n - 1)


def kernel_matrix(n, m, name, mode):
    r = n / m
    scale = max(r, 1.0)
    M = np.zeros((m, n))
    for j in range(m):
        c = (j + 0.5) * r
        reach = 3 * scale
        for t in range(math.floor(c - reach), math.ceil(c + reach) + 1):
            w = float(kernel(name, (t + 0.5 - c) / scale))
            M[j, int(wrap(t, n, mode))] += w
    return M / M.sum(axis=1, keepdims=True)


def apply(My, a, Mx):
    t = np.tensordot(My, a, axes=(1, 0))  # (dh, w, c)
    return np.einsum("yxc,Xx->yXc", t, Mx, optimize=True)


def to_canonical(a, channels, srgb, alpha_mode, normal=False):
    """Texture components in [0,1] -> float64 rgba in linear light (premultiplied for weighted)."""
    a = np.asarray(a, np.float64)
    if normal:
        if channels == 2:
            xy = a[..., :2] * 2 - 1
            z = np.sqrt(np.clip(1 - (xy ** 2).sum(-1, keepdims=True), 0, None))
            return np.concatenate([xy, z, np.ones_like(z)], -1)
        return np.concatenate([a[..., :3] * 2 - 1, a[..., 3:4] if channels == 4 else np.ones_like(a[..., :1])], -1)
    if channels == 1:
        c = np.concatenate([a[..., :1]] * 3 + [np.ones_like(a[..., :1])], -1)
    elif channels == 2:
        c = np.concatenate([a[..., :1]] * 3 + [a[..., 1:2]], -1)
    else:
        c = a.copy()
    if srgb:
        c[..., :3] = srgb_to_linear(c[..., :3])
    return c


def filter_levels(base, channels, *, srgb, alpha_mode="weighted", filter="box", wrap_mode="clamp",
                  normal=False, levels=None):
    """Float64 final values of every level >= 1, as texture components in [0, 1] (before quantizing)."""
    h, w = base.shape[:2]
    n = levels or max(w, h).bit_length()
    lin = to_canonical(base, channels, srgb, alpha_mode, normal)
    weighted = alpha_mode == "weighted" and channels in (2, 4) and not normal
    out, prev = [], None
    for level in range(1, n):
        dw, dh = level_size(w, h, level)
        if filter == "box":
            My, Mx = box_matrix(h, dh), box_matrix(w, dw)
            src = lin
        else:
            pw, ph = level_size(w, h, level - 1)
            My, Mx = kernel_matrix(ph, dh, filter, wrap_mode), kernel_matrix(pw, dw, filter, wrap_mode)
            src = lin if level == 1 else prev
        if weighted:
            if filter == "box" or level == 1:
                premult = np.concatenate([src[..., :3] * src[..., 3:], src[..., 3:]], -1)
                plain = src
            else:
                premult, plain = src
            pm = apply(My, premult, Mx)
            pl = apply(My, plain, Mx)
            alpha = pm[..., 3:]
            rgb = np.where(alpha > 0, pm[..., :3] / np.where(alpha > 0, alpha, 1), pl[..., :3])
            val = np.concatenate([rgb, alpha], -1)
            prev = (pm, pl)
        else:
            val = apply(My, src, Mx)
            prev = val
        out.append(val)
    return [_finish(v, channels, srgb, normal) for v in out]


def _finish(v, channels, srgb, normal):
    v = v.copy()
    if normal:
        n = v[..., :3] / np.linalg.norm(v[..., :3], axis=-1, keepdims=True)
        rgb = n * 0.5 + 0.5
        if channels == 2:
            return rgb[..., :2]
        return np.concatenate([rgb, v[..., 3:]], -1)
    v[..., 3] = np.clip(v[..., 3], 0, 1)
    if srgb:
        v[..., :3] = linear_to_srgb(v[..., :3])
    if channels == 1:
        return v[..., :1]
    if channels == 2:
        return v[..., [0, 3]]
    return v
