"""A study, not a benchmark: whether colour histograms tell a dissolve between two moving shots
from motion inside one shot (docs/history/benchmarks-2026-11.md, "A histogram test for blends of moving shots").

For each window, the middle frames' Y, U and V histograms (32 bins, earth mover's distance) are
compared with those of the pixel-wise blend of the window's end frames at the frame's α (from the
mean colours), and with the mixture of the ends' histograms at the same α (a pan or a wipe: each
pixel from one picture or the other). A dissolve should fit the blend far better than the mixture
(a low ratio); a continuous shot should not. Prints the ratio for every dissolve of the tuned clips
of scripts/bench-scenes in H.264 (built there first) and for 30- and 60-frame windows that hold no change.

    python3 research/blend_histograms.py [--cache DIR] [CLIP…]   (tuned clips only)
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenes import CLIPS, clip_paths  # noqa: E402  (which clips are tuned, and where they are)

WIDTH, HEIGHT = 64, 36
BINS = np.linspace(0, 256, 33)
# The frames a window's fit is judged on: those well inside the blend, by their α.
MIDDLE = (0.25, 0.75)
# Windows that hold no change: their lengths, how far apart they start, the frames kept clear of
# any change's span, and how far apart (block means, 0–255) their ends must be to count.
QUIET_LENGTHS, QUIET_STRIDE, QUIET_MARGIN, QUIET_SPAN = (30, 60), 10, 3, 12


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
    """(ratio, blend residual per unit of the ends' histogram distance)."""
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
        if not MIDDLE[0] <= alpha <= MIDDLE[1]:
            continue
        hist = cumulative_histograms(frames[m])
        blend_residuals.append(earth_movers(hist, cumulative_histograms((1 - alpha) * first + alpha * last)))
        mixture_residuals.append(earth_movers(hist, (1 - alpha) * hist_a + alpha * hist_b))
    if len(blend_residuals) < 3:
        return None
    ratio = np.mean(blend_residuals) / max(1e-6, np.mean(mixture_residuals))
    return float(ratio), float(np.mean(blend_residuals) / earth_movers(hist_a, hist_b))


def tuned_clips(cache, names):
    """(name, ground truth, thumbnails) of each named tuned clip (every one if none are named), as
    scripts/bench-scenes built it in H.264; held-out clips are skipped, with a word on stderr."""
    for name in names or sorted(CLIPS):
        if name not in CLIPS:
            sys.exit(f"{name}: no such clip")
        if not CLIPS[name]["tuned"]:
            print(f"{name}: held out, skipped", file=sys.stderr)
            continue
        clip, truth_path = clip_paths(cache, name)
        if not os.path.exists(truth_path):
            sys.exit(f"{name}: not built yet (scripts/bench-scenes --clips {name} --moments-only builds it)")
        with open(truth_path) as f:
            truth = json.load(f)
        yield name, truth, thumbnails(clip)


def quiet_windows(frames, truth):
    """(a, b, the hard negatives it holds) for each window of `QUIET_LENGTHS` frames, every
    `QUIET_STRIDE`, that holds no change (with `QUIET_MARGIN` frames clear) and whose ends are more
    than `QUIET_SPAN` apart on the blocks."""
    changes = [(t["start"] - QUIET_MARGIN, t["end"] + QUIET_MARGIN) for t in truth["transitions"]]
    for length in QUIET_LENGTHS:
        for a in range(0, len(frames) - length, QUIET_STRIDE):
            b = a + length
            if any(not (b < start or a > end) for start, end in changes):
                continue
            if np.abs(block_means(frames[a]) - block_means(frames[b])).mean() <= QUIET_SPAN:
                continue
            yield a, b, [n["kind"] for n in truth["negatives"] if not (b < n["start"] or a > n["end"])]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default=os.environ.get("MOMENTS_BENCH_CACHE", os.path.expanduser("~/.cache/moments/bench-scenes")))
    parser.add_argument("clips", nargs="*")
    args = parser.parse_args()
    quiet = []
    for name, truth, frames in tuned_clips(args.cache, args.clips):
        for t in truth["transitions"]:
            if t["kind"] == "dissolve":
                result = window(frames, t["start"] - 1, t["end"] + 1)
                print(f"dissolve {name} {t['frame']}: " + ("ratio %.3f, blend residual %.3f" % result[:2] if result
                                                             else "no fit (ends alike, or under three middle frames)"))
        for a, b, negatives in quiet_windows(frames, truth):
            result = window(frames, a, b)
            if result:
                quiet.append((result[0], name, a, b, negatives))
    quiet.sort()
    print(f"windows with no change, ends apart: {len(quiet)}; ratio under 0.6: {sum(r[0] < 0.6 for r in quiet)}, "
          f"under 0.8: {sum(r[0] < 0.8 for r in quiet)}")
    for ratio, name, a, b, negatives in quiet[:10]:
        print(f"  {ratio:.3f} {name} {a}–{b} {', '.join(negatives)}")


if __name__ == "__main__":
    main()
