"""A study, not a benchmark: how much decoding the scene analysis could save at best on the
real-footage clips of scripts/bench-scenes (docs/history/benchmarks-2026-11.md, "How near 3x can be").

A detector of moments' kind samples every keyframe and places each change on its frame. However
well it chose where to look, it would decode at least:

* every keyframe and the picture after it (the sample runs);
* for each change, every picture from a look-around's frames before its first frame to its
  frames after its last (the steps either side that tell a cut from a flash or from motion: the
  detector's cut window is 8 frames each way, and `--look 3:3` asks what a detector that needed
  only 3 would save), and the reference pictures from the keyframe before that stretch up to the
  first one after it (what those pictures are predicted from);
* nothing else: no GOP that holds no change, no hard negative looked at; or, with a look-around
  written `8:8+events`, the short hard negatives too (flashes, whip pans, quick zooms, a light
  switched on), each looked at as a change is, since no detector tells one from a cut unseen
  (the long ones, hand-held footage, water and flicker, are left out: only a part of each stands
  out).

Each picture costs what FFmpeg's decoder spends on its kind on that clip without the loop filter
(as the analysis decodes): keyframes, other reference pictures, non-reference pictures, measured by
decoding the clip with `-skip_frame nokey`, `noref` and `default` on two threads, with the cost
of starting and demuxing (the stream copied, not decoded) apart. The floor is those
costs summed over the pictures above. Printed beside it, from the same run: FFmpeg's own full
decode (the benchmark's yardstick) and `moments analyze`, as CPU seconds and as speed-ups over
FFmpeg's decode (CPU over CPU; both keep the two cores about as busy, 74–82 %, so the wall-time figures
of scripts/bench-scenes come out alike). Every figure of a clip comes from one turn, in which each
decode and the analysis ran one after another; of `--repeat` turns, the one with the median floor
(by its speed-up) is printed, and every turn on standard error.

    python3 research/decode_floor.py [--codec h264|hevc] [--look BEFORE:AFTER[+events] …]
        [--repeat 3] [--binary .build/release/moments] [--cache DIR] [CLIP…]

Clips come as scripts/bench-scenes built them (tuned and held-out alike: nothing here is tuned).
"""

import argparse
import bisect
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenes import CLIPS, clip_paths, timed  # noqa: E402


def demux_cpu(clip):
    """CPU seconds (user and system) FFmpeg spends starting and reading the video stream."""
    return timed(["ffmpeg", "-v", "error", "-i", clip, "-map", "0:v", "-c", "copy", "-f", "null", "-"])[2]


def decode_cpu(clip, skip, loop_filter=False):
    """CPU seconds of FFmpeg's 2-thread decode with `-skip_frame skip` (and without the loop filter)."""
    options = [] if loop_filter else ["-skip_loop_filter", "all"]
    return timed(["ffmpeg", "-v", "error", "-threads", "2", "-skip_frame", skip, *options, "-i", clip,
                  "-map", "0:v", "-f", "null", "-"])[2]


def kinds(clip):
    """Each picture's kind in display order: "key", "ref" (another reference picture) or "nonref".
    The packets give every picture's time and the keyframes; the pictures FFmpeg's decoder still
    returns with `-skip_frame noref` are the references."""
    def entries(*options):
        out = subprocess.run(["ffprobe", "-v", "error", *options, "-select_streams", "v:0", "-of", "csv=p=0", clip],
                             capture_output=True, text=True, check=True).stdout
        return [line.split(",") for line in out.split() if line.split(",")[0].lstrip("-").isdigit()]
    packets = sorted((int(pts), "K" in flags) for pts, flags, *_ in entries("-show_entries", "packet=pts,flags"))
    references = {int(pts) for pts, *_ in entries("-skip_frame", "noref", "-show_entries", "frame=pts")}
    return ["key" if key else "ref" if pts in references else "nonref" for pts, key in packets]


# Hard negatives short enough to be looked at whole, as a change is.
EVENTS = ("flash", "whip", "zoom", "light")


def floor_pictures(kind, truth, before, after, events=False):
    """The display indices of the pictures the least decoding needs (see the module's words)."""
    keys = [i for i, k in enumerate(kind) if k == "key"]
    references = [i for i, k in enumerate(kind) if k != "nonref"]
    needed = set()
    for key in keys:  # the sample runs: the keyframe and the next reference picture
        needed.add(key)
        following = bisect.bisect_right(references, key)
        if following < len(references):
            needed.add(references[following])
    looked_at = truth["transitions"] + ([n for n in truth["negatives"] if n["kind"] in EVENTS] if events else [])
    for change in looked_at:
        first = max(0, change["start"] - before)
        last = min(len(kind) - 1, change["end"] + after)
        needed.update(range(first, last + 1))
        # The references from the keyframe before the stretch up to the first one after it.
        opening = keys[max(0, bisect.bisect_right(keys, first) - 1)]
        needed.update(references[bisect.bisect_left(references, opening):bisect.bisect_right(references, last) + 1])
    return needed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("clips", nargs="*", help="clips (default: every clip scripts/bench-scenes has built)")
    parser.add_argument("--codec", default="h264", choices=["h264", "hevc"])
    parser.add_argument("--look", action="append", metavar="BEFORE:AFTER[+events]",
                        help="frames looked at before and after a change, one floor each; +events: the short hard "
                             "negatives looked at too (default: 8:8, the detector's cut window, 3:3 and 8:8+events)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--binary", default=".build/release/moments")
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/moments/bench-scenes"))
    args = parser.parse_args()
    looks = []
    for look in args.look or ["8:8", "3:3", "8:8+events"]:
        frames, events = look.removesuffix("+events"), look.endswith("+events")
        try:
            before, after = (int(n) for n in frames.split(":"))
            if min(before, after) < 0:
                raise ValueError
        except ValueError:
            sys.exit(f"--look {look}: BEFORE:AFTER (two whole numbers of frames, 0 or more), +events to look at the short hard negatives too")
        looks.append((look, before, after, events))
    if args.repeat < 1:
        sys.exit("--repeat takes 1 or more turns")

    rows = []
    for name in args.clips or list(CLIPS):
        if name not in CLIPS:
            sys.exit(f"{name}: no such clip")
        clip, truth_path = clip_paths(args.cache, name, args.codec)
        if not os.path.exists(truth_path):
            if args.clips:
                sys.exit(f"{name}: not built yet (scripts/bench-scenes --codec {args.codec} --clips {name} --moments-only builds it)")
            continue
        with open(truth_path) as f:
            truth = json.load(f)
        kind = kinds(clip)
        count = {k: kind.count(k) for k in ("key", "ref", "nonref")}
        pictures = [floor_pictures(kind, truth, before, after, events) for _, before, after, events in looks]
        # Each turn times every decode and the analysis one after another, so all see the same load
        # (this machine's speed drifts by a third from minute to minute); the median turn counts.
        turns = []
        for _ in range(args.repeat):
            opening = demux_cpu(clip)
            keys_cpu, references_cpu, every_cpu = (decode_cpu(clip, skip) for skip in ("nokey", "noref", "default"))
            ffmpeg_cpu = decode_cpu(clip, "default", loop_filter=True)
            # Seconds per picture of each kind (never below zero where two figures lie within noise).
            cost = {"key": max(0.0, keys_cpu - opening) / max(1, count["key"]),
                    "ref": max(0.0, references_cpu - keys_cpu) / max(1, count["ref"]),
                    "nonref": max(0.0, every_cpu - references_cpu) / max(1, count["nonref"])}
            floors = [opening + sum(cost[kind[i]] for i in needed) for needed in pictures]
            moments_cpu, decoded = None, None
            if os.path.exists(args.binary):
                out, _, moments_cpu = timed([args.binary, "analyze", clip, "--json"])
                decoded = json.loads(out)["decoded_frames"]
            turns.append((ffmpeg_cpu, floors, moments_cpu, decoded))
            print(f"{name}: ffmpeg {ffmpeg_cpu:.2f} s, floors " + ", ".join(f"{f:.2f}" for f in floors)
                  + (f", moments {moments_cpu:.2f} s" if moments_cpu else "")
                  + f"; ms a picture {cost['key'] * 1e3:.1f} (keyframe), {cost['ref'] * 1e3:.1f} (other reference), "
                  f"{cost['nonref'] * 1e3:.1f} (other); opening {opening:.2f} s", file=sys.stderr)
        ffmpeg_cpu, floors, moments_cpu, decoded = sorted(turns, key=lambda t: t[0] / t[1][0])[len(turns) // 2]
        rows.append((name, truth, len(kind), [(len(p), f) for p, f in zip(pictures, floors)], ffmpeg_cpu, moments_cpu, decoded))

    print(f"Least decoding ({args.codec}) against FFmpeg's full 2-thread decode: CPU seconds, pictures decoded, "
          f"speed-up (FFmpeg's CPU over each); a floor per look-around (frames before:after a change)")
    print(f"{'clip':10} {'tuned':>5} {'changes':>7} {'ffmpeg':>7}" + "".join(f" {'floor ' + look:>25}" for look, _, _, _ in looks)
          + f" {'moments analyze':>25}")
    for name, truth, total, floors, ffmpeg_cpu, moments_cpu, decoded in rows:
        line = f"{name:10} {'yes' if CLIPS[name]['tuned'] else 'no':>5} {len(truth['transitions']):7d} {ffmpeg_cpu:7.2f}"
        for needed, cpu in floors:
            line += f" {cpu:6.2f} {needed:5d}/{total:<5d} {ffmpeg_cpu / cpu:6.2f}x"
        line += f" {moments_cpu:6.2f} {decoded:5d}/{total:<5d} {ffmpeg_cpu / moments_cpu:6.2f}x" if moments_cpu else f" {'-':>25}"
        print(line)


if __name__ == "__main__":
    main()
