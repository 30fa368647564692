"""A study, not a benchmark: whether colour histograms tell a dissolve between two moving shots
from motion inside one shot (docs/benchmarks.md, "A histogram test for blends of moving shots").

For each window, the middle frames' Y, U and V histograms (32 bins, earth mover's distance) are
compared with those of the pixel-wise blend of the window's end frames at the frame's α (from the
mean colours), and with the mixture of the ends' histograms at the same α (a pan or a wipe: each
pixel from one picture or the other). A dissolve should fit the blend far better than the mixture
(a low ratio); a continuous shot should not. Prints the ratio for every dissolve of the tuned clips
of scripts/bench-scenes in H.264 (built there first) and for 30- and 60-frame windows that hold no change.

    python3 scripts/study_blend_histograms.py [--cache DIR] [CLIP…]   (tuned clips only)
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_scenes import CLIPS  # noqa: E402  (which clips are tuned)

WIDTH, HEIGHT = 64, 36
BINS = np.linspace(0, 256, 33)


def thumbnails(path):
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vf", f"scale={WIDTH}:{HEIGHT}:flags=area,format=yuv444p",
                          "-f", "rawvideo", "-"], capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, 3, HEIGHT, WIDTH).astype(np.float32)


def cumulative_histograms(picture):
    return np.stack([np.cumsum(np.histogram(picture[c], BINS)[0]) / picture[c].size for c in range(3)])


def earth_movers(a, b):
    return float(np.abs(a - b).sum() * (BINS[1] - BINS[0]))


def block_means(picture):
    return picture.reshape(3, HEIGHT // 4, 4, WIDTH // 4, 4).mean(axis=(2, 4))


def window(frames, a, b):
    """(ratio, blend residual per unit of the ends' histogram distance, ends' block distance)."""
    first, last = frames[a], frames[b]
    mean_a, mean_b = first.mean(axis=(1, 2)), last.mean(axis=(1, 2))
    direction = mean_b - mean_a
    norm = float((direction * direction).sum())
    if norm < 1:
        return None
    hist_a, hist_b = cumulative_histograms(first), cumulative_histograms(last)
    blend_residuals, mixture_residuals = [], []
    for m in range(a + 1, b):
        alpha = float(np.clip(((frames[m].mean(axis=(1, 2)) - mean_a) * direction).sum() / norm, 0, 1))
        if not 0.25 <= alpha <= 0.75:
            continue
        hist = cumulative_histograms(frames[m])
        blend_residuals.append(earth_movers(hist, cumulative_histograms((1 - alpha) * first + alpha * last)))
        mixture_residuals.append(earth_movers(hist, (1 - alpha) * hist_a + alpha * hist_b))
    if len(blend_residuals) < 3:
        return None
    ratio = np.mean(blend_residuals) / max(1e-6, np.mean(mixture_residuals))
    return float(ratio), float(np.mean(blend_residuals) / earth_movers(hist_a, hist_b)), float(np.abs(block_means(first) - block_means(last)).mean())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default=os.environ.get("MOMENTS_BENCH_CACHE", os.path.expanduser("~/.cache/moments/bench-scenes")))
    parser.add_argument("clips", nargs="*")
    args = parser.parse_args()
    folder = os.path.join(args.cache, "clips")
    names = args.clips or sorted(CLIPS)
    quiet = []
    for name in names:
        if name not in CLIPS:
            sys.exit(f"{name}: no such clip")
        if not CLIPS[name]["tuned"]:
            print(f"{name}: held out, skipped", file=sys.stderr)
            continue
        truth = json.load(open(os.path.join(folder, f"{name}.mp4.truth.json")))
        frames = thumbnails(os.path.join(folder, f"{name}.mp4"))
        changes = [(t["start"] - 3, t["end"] + 3) for t in truth["transitions"]]
        for t in truth["transitions"]:
            if t["kind"] == "dissolve":
                result = window(frames, t["start"] - 1, t["end"] + 1)
                print(f"dissolve {name} {t['frame']}: " + ("ratio %.3f, blend residual %.3f" % result[:2] if result else "no middle frames"))
        for length in (30, 60):
            for a in range(0, len(frames) - length, 10):
                b = a + length
                if any(not (b < start or a > end) for start, end in changes):
                    continue
                result = window(frames, a, b)
                if result and result[2] > 12:
                    negatives = [n["kind"] for n in truth["negatives"] if not (b < n["start"] or a > n["end"])]
                    quiet.append((result[0], name, a, b, negatives))
    quiet.sort()
    print(f"windows with no change, ends apart: {len(quiet)}; ratio under 0.6: {sum(r[0] < 0.6 for r in quiet)}, "
          f"under 0.8: {sum(r[0] < 0.8 for r in quiet)}")
    for ratio, name, a, b, negatives in quiet[:10]:
        print(f"  {ratio:.3f} {name} {a}–{b} {', '.join(negatives)}")


if __name__ == "__main__":
    main()
