"""rodl.io's centre finder and stripe removal next to algotom's on the same synthetic scans.

A parallel-beam scan of balls in closed form (no projector involved), 16-bit counts with
Poisson noise, the rotation axis off the detector's centre by a fractional number of pixels,
and stripes (ten detector columns with a constant offset). For each case: the centre found by
``rodl.io.find_centre`` (two opposite views registered) and by algotom's
``find_center_vo`` (Vo et al. 2014, Fourier-space metric over the whole 180-degree sinogram),
with their errors and times; the PSNR of the sinogram before and after
``rodl.io.remove_stripes`` and algotom's ``remove_stripe_based_sorting`` (the same method, Vo et
al. 2018) with the same window, and their times.

    python3 benches/python/preprocess_vs_algotom.py [--nu 512] [--views 900] [--rows 8]
"""

import argparse
import math
import time

import numpy as np

import rodl

try:
    from algotom.prep.calculation import find_center_vo
    from algotom.prep.removal import remove_stripe_based_sorting
except ImportError as e:  # pragma: no cover
    raise SystemExit(f"needs algotom (pip install algotom): {e}")


def scan(nu, views, rows, shift, seed):
    """Line integrals [angle, u, v] of three balls, the axis `shift` pixels off centre."""
    rng = np.random.default_rng(seed)
    angles = (np.arange(views) + 0.5) * math.pi / views
    u = np.arange(nu) + 0.5 - nu / 2 + shift
    y = np.zeros((views, nu))
    for cx, cy, r, mu in [(0.1, -0.05, 0.3, 0.01), (-0.2, 0.15, 0.1, 0.02), (0.15, 0.2, 0.05, 0.03)]:
        c = (cx * np.cos(angles) + cy * np.sin(angles)) * nu
        d2 = (r * nu) ** 2 - (u[None, :] - c[:, None]) ** 2
        y += 2 * mu * np.sqrt(np.clip(d2, 0, None))
    y = np.repeat(y[:, :, None], rows, axis=2)
    i0 = 2e4
    counts = rng.poisson(i0 * np.exp(-y)).astype(np.float32)
    noisy = -np.log(np.clip(counts, 1, None) / i0).astype(np.float32)
    striped = noisy.copy()
    # Ten detector columns with offsets of 0.05-0.2 (a few % of the data's range each).
    for j, col in enumerate(rng.choice(np.arange(nu // 8, 7 * nu // 8), 10, replace=False)):
        striped[:, col, :] += (0.05 + 0.15 * rng.random()) * (1 if j % 2 else -1)
    return angles, y.astype(np.float32), noisy, striped


def psnr(x, ref):
    mse = np.mean((x - ref) ** 2)
    return 10 * math.log10(float(ref.max() - ref.min()) ** 2 / mse)


def timed(f, *a, **k):
    t = time.perf_counter()
    r = f(*a, **k)
    return r, time.perf_counter() - t


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nu", type=int, default=512)
    p.add_argument("--views", type=int, default=900)
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--size", type=int, default=5, help="stripe-removal window (odd)")
    args = p.parse_args()
    print(f"{args.views} views x {args.nu} px x {args.rows} rows, Poisson (I0 = 2e4), 10 stripes")
    print("| shift (px) | rodl centre error | rodl time | algotom centre error | algotom time |")
    print("|---|---|---|---|---|")
    for k, shift in enumerate([3.4, -7.75, 12.3]):
        angles, _, noisy, _ = scan(args.nu, args.views, args.rows, shift, k)
        (_, off), t_r = timed(rodl.io.find_centre, noisy, angles)
        # algotom: one sinogram [angle, u] (the middle row); returns the axis' pixel position.
        sino = np.ascontiguousarray(noisy[:, :, args.rows // 2])
        cor, t_a = timed(find_center_vo, sino, ncore=1)
        off_a = (args.nu - 1) / 2 - cor
        print(f"| {shift} | {off - shift:+.3f} px | {t_r * 1e3:.1f} ms | {off_a - shift:+.3f} px | {t_a * 1e3:.1f} ms |")
    angles, clean, noisy, striped = scan(args.nu, args.views, args.rows, 3.4, 9)
    fixed, t_r = timed(rodl.io.remove_stripes, striped, args.size)
    fixed_a = np.empty_like(striped)
    t = time.perf_counter()
    for v in range(args.rows):
        fixed_a[:, :, v] = remove_stripe_based_sorting(np.ascontiguousarray(striped[:, :, v]), size=args.size)
    t_a = time.perf_counter() - t
    print()
    print(f"stripe removal, window {args.size}: sinogram PSNR against the noise-free data")
    print("| | PSNR | time (all rows) |")
    print("|---|---|---|")
    print(f"| with stripes | {psnr(striped, clean):.2f} dB | — |")
    print(f"| without stripes (noise only) | {psnr(noisy, clean):.2f} dB | — |")
    print(f"| rodl.io.remove_stripes | {psnr(fixed, clean):.2f} dB | {t_r * 1e3:.1f} ms |")
    print(f"| algotom remove_stripe_based_sorting | {psnr(fixed_a, clean):.2f} dB | {t_a * 1e3:.1f} ms |")
    print(f"rodl vs algotom: max |difference| {np.abs(fixed - fixed_a).max():.2e}")


if __name__ == "__main__":
    main()
