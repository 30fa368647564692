"""A study, not a benchmark: whether a motion-compensated blend test tells a dissolve between two
moving shots from motion inside one shot (docs/history/benchmarks-2026-11.md, "A motion-compensated blend test").

The detector's blend fit asks that every frame of a window be a pixel-wise blend of the window's
ends, block by block; where both shots move, their content has moved by the middle of a 2 s
blend, and the fit fails. Here each 8 x 6-pixel block of a middle frame (64 x 36 thumbnails, as
the detector sees; luma alone or with chroma, `--planes`) may take the ends' content from anywhere
within `--radius` pixels, its own offset for each end:
- `alone`: the block as the better of the two ends alone, each moved to fit best;
- `blend`: the block as (1 - α)·first + α·last, α the frame's place along the window, each end
  moved on its own (two rounds of fitting one end with the other held).
A dissolve's middle frames are neither end but their blend: `blend` far below `alone`. Within one
shot, the moved end explains the frame about as well as any blend. Prints the ratio blend/alone
(mean over the frames with α between 0.25 and 0.75) for every dissolve of the tuned clips of
scripts/bench-scenes in H.264 (built there first) and for 30- and 60-frame windows that hold no
change. `--triggers` instead replicates the scanner's keyframe colour trigger and tries it over two
GOPs, to see whether the GOPs of the dissolves it misses would be decoded at all.

    python3 research/blend_motion.py [--cache DIR] [--radius N] [--planes y|yuv] [--alone moved|self] [CLIP…]
    python3 research/blend_motion.py --triggers [CLIP…]   (tuned clips only, both)
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blend_histograms import MIDDLE, quiet_windows, tuned_clips  # noqa: E402

BLOCK_W, BLOCK_H = 8, 6


def block_sums(picture):
    """Sums of |picture| over each 8 x 6 block and the planes (the last axes are planes, 36, 64)."""
    h, w = picture.shape[-2:]
    return np.abs(picture).reshape(*picture.shape[:-2], h // BLOCK_H, BLOCK_H, w // BLOCK_W, BLOCK_W).sum(axis=(-5, -3, -1))


def shifted(picture, radius):
    """Every copy of `picture` ([plane, h, w]) moved by up to `radius` pixels each way (edges
    repeated): [shift, plane, h, w]."""
    h, w = picture.shape[-2:]
    padded = np.pad(picture, ((0, 0), (radius, radius), (radius, radius)), mode="edge")
    return np.stack([padded[:, radius + dy:radius + dy + h, radius + dx:radius + dx + w]
                     for dy in range(-radius, radius + 1) for dx in range(-radius, radius + 1)])


def per_block(copies, choice):
    """The picture whose every block comes from its chosen copy."""
    n, planes, h, w = copies.shape
    blocks = copies.reshape(n, planes, h // BLOCK_H, BLOCK_H, w // BLOCK_W, BLOCK_W)
    rows, cols = np.indices(choice.shape)
    # [rows, cols, planes, BLOCK_H, BLOCK_W] -> [planes, rows, BLOCK_H, cols, BLOCK_W]
    return blocks[choice, :, rows, :, cols, :].transpose(2, 0, 3, 1, 4).reshape(planes, h, w)


def blended(frame, first_copies, last_copies, alpha, choice_last):
    """Each block's residual as (1 - α)·first + α·last, each moved on its own to fit best, starting
    from `choice_last`, each block's best offset of `last` alone."""
    for _ in range(2):
        rest = frame - alpha * per_block(last_copies, choice_last)
        choice_first = block_sums(rest[None] - (1 - alpha) * first_copies).argmin(axis=0)
        rest = frame - (1 - alpha) * per_block(first_copies, choice_first)
        errors = block_sums(rest[None] - alpha * last_copies)
        choice_last = errors.argmin(axis=0)
    return errors.min(axis=0)


def explained(frame, first_copies, last_copies, alpha, alone="moved"):
    """(alone, blend): the frame's block residuals, summed, as either end alone and as their blend.
    Alone is either end moved (`moved`) or blended with itself at two offsets (`self`: what
    averaging two pictures of moving texture, water, gains without any second shot)."""
    to_first, to_last = block_sums(frame[None] - first_copies), block_sums(frame[None] - last_copies)
    if alone == "self":
        best = np.minimum(blended(frame, first_copies, first_copies, alpha, to_first.argmin(axis=0)),
                          blended(frame, last_copies, last_copies, alpha, to_last.argmin(axis=0)))
    else:
        best = np.minimum(to_first.min(axis=0), to_last.min(axis=0))
    return float(best.sum()), float(blended(frame, first_copies, last_copies, alpha, to_last.argmin(axis=0)).sum())


def window(pictures, a, b, radius, alone="moved"):
    """The mean blend/alone ratio over the window's middle frames, or None."""
    first_copies, last_copies = shifted(pictures[a], radius), shifted(pictures[b], radius)
    ratios = []
    for m in range(a + 1, b):
        alpha = (m - a) / (b - a)
        if not MIDDLE[0] <= alpha <= MIDDLE[1]:
            continue
        single, blend = explained(pictures[m], first_copies, last_copies, alpha, alone)
        ratios.append(blend / max(single, 1e-6))
    return float(np.mean(ratios)) if len(ratios) >= 3 else None


def histogram_distance(a, b):
    """The scanner's keyframe colour distance (Thumbnail.histogramDistance, brightness aligned)."""
    def distance(x, y, bins, shift=0):
        hx = np.bincount((x.astype(np.int32) * bins // 256).ravel(), minlength=bins)
        hy = np.bincount((np.clip(y.astype(np.int32) + shift, 0, 255) * bins // 256).ravel(), minlength=bins)
        return np.abs(hx - hy).sum() / (2 * x.size)
    shift = int(round(float(a[0].mean() - b[0].mean())))
    luma = min(distance(a[0], b[0], 32), distance(a[0], b[0], 32, shift))
    return (luma + distance(a[1], b[1], 16) + distance(a[2], b[2], 16)) / 3


def triggers(frames, truth, gop=30, always=0.3, floor=0.12, ratio=2.5, recent=9):
    """The scanner's colour trigger on 1 s GOPs (an approximation: its other triggers left out), and
    one over two GOPs (keyframe k against k + 2) for the GOP pairs neither of whose GOPs it fires on:
    [(first keyframe, each GOP's distance, the two GOPs', typical, fires, the changes it holds)]."""
    keys = list(range(0, len(frames), gop))
    d1 = [histogram_distance(frames[k], frames[n]) for k, n in zip(keys, keys[1:])]
    fired, rows = [], []
    for i, distance in enumerate(d1):
        past = sorted(d1[max(0, i - recent):i])
        typical = past[int(len(past) * 0.25)] if past else 0
        fired.append(distance >= always or (distance >= floor and distance >= ratio * typical))
        if i >= 1 and not fired[i - 1] and not fired[i]:
            d2 = histogram_distance(frames[keys[i - 1]], frames[keys[i + 1]])
            fires = d2 >= always and d2 >= ratio * typical
            span = (keys[i - 1], keys[i + 1])
            changes = [t for t in truth["transitions"] if t["start"] <= span[1] and t["end"] >= span[0]]
            rows.append((keys[i - 1], d1[i - 1], distance, d2, typical, fires, changes))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default=os.environ.get("MOMENTS_BENCH_CACHE", os.path.expanduser("~/.cache/moments/bench-scenes")))
    parser.add_argument("--radius", type=int, default=4, help="how far (thumbnail pixels) a block's content may move")
    parser.add_argument("--alone", choices=("moved", "self"), default="moved",
                        help="what a frame of one shot is measured as: either end moved, or blended with itself")
    parser.add_argument("--planes", choices=("y", "yuv"), default="yuv", help="luma alone, or luma and chroma")
    parser.add_argument("clips", nargs="*")
    parser.add_argument("--triggers", action="store_true",
                        help="instead: the scanner's colour trigger over one GOP and over two, per GOP pair")
    args = parser.parse_args()
    if args.triggers:
        return study_triggers(args)
    quiet, found = [], []
    for name, truth, frames in tuned_clips(args.cache, args.clips):
        pictures = frames[:, :1] if args.planes == "y" else frames
        for t in truth["transitions"]:
            if t["kind"] == "dissolve":
                ratio = window(pictures, t["start"] - 1, t["end"] + 1, args.radius, args.alone)
                found.append(ratio)
                print(f"dissolve {name} {t['frame']} ({t['end'] - t['start'] + 1} frames): "
                      + (f"ratio {ratio:.3f}" if ratio is not None else "under three middle frames"), flush=True)
        for a, b, negatives in quiet_windows(frames, truth):
            ratio = window(pictures, a, b, args.radius, args.alone)
            if ratio is not None:
                quiet.append((ratio, name, a, b, negatives))
    quiet.sort()
    ratios = sorted(r for r in found if r is not None)
    print(f"dissolves: {len(ratios)}, ratio {ratios[0]:.3f}–{ratios[-1]:.3f}" if ratios else "no dissolves")
    for bar in (0.5, 0.6, 0.7, 0.8):
        print(f"  under {bar}: dissolves {sum(r < bar for r in ratios)} of {len(ratios)}, "
              f"windows with no change {sum(r[0] < bar for r in quiet)} of {len(quiet)}")
    for ratio, name, a, b, negatives in quiet[:12]:
        print(f"  {ratio:.3f} {name} {a}–{b} {', '.join(negatives)}")


def study_triggers(args):
    extra_quiet, extra_changes = 0, 0
    for name, truth, frames in tuned_clips(args.cache, args.clips):
        for key, first, second, d2, typical, fires, changes in triggers(frames, truth):
            dissolves = [t for t in changes if t["kind"] == "dissolve"]
            if fires or dissolves:
                held = ", ".join(f"{t['kind']} at {t['frame']}" for t in changes) or "no change"
                print(f"{name} keyframes {key}–{key + 60}: one GOP {first:.3f}, {second:.3f}; two {d2:.3f} (typical {typical:.3f}): "
                      f"{'fires' if fires else 'quiet'}; {held}")
            if fires:
                extra_changes += bool(changes)
                extra_quiet += not changes
    print(f"two-GOP trigger where the one-GOP one is quiet: fires on {extra_changes} pairs holding a change, {extra_quiet} holding none")


if __name__ == "__main__":
    main()
