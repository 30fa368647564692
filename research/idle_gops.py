"""A study, not a benchmark: where `moments analyze` decodes whole GOPs on the real-footage clips of
scripts/bench-scenes, what sent each GOP there, and whether the ground truth has a change in it
(docs/history/benchmarks-2026-11.md, "A new machine, and where the 3x goal stands").

Each GOP the scanner decodes beyond its keyframe's sample is read from its `MOMENTS_DEBUG_SCAN`
line: a jump of the keyframes' colours, a packet spike, a jump of their colour layout or still
structure, a keyframe whose sample moved far more than its neighbours' (`activity`), a keyframe
the encoder started early, a change going on into it from the GOP before ("other": none of
these, as for the video's last GOP or a black or white keyframe). A GOP holds a change where a
transition of the ground truth reaches within two frames of it. Printed: one line per GOP that
held none, then per set of triggers the GOPs, the frames they decoded, those that held a change,
and the frames spent in those that held none; with `--all`, a line for every decoded GOP.

    python3 research/idle_gops.py [--codec h264|hevc|x264] [--all] [--binary .build/release/moments]
        [--cache DIR] [CLIP…]
"""

import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenes import CLIPS, clip_paths  # noqa: E402

GOP_LINE = re.compile(
    r"gop (?P<index>\d+) at (?P<time>[\d.]+): activity (?P<activity>[-\d.]+) \(median [\d.]+\), "
    r"(?P<packets>\d+) packets, colour (?P<colour>[\d.]+) \(typical (?P<typical>[\d.]+)(?P<jump>, a jump)?\), "
    r"spike (?P<spike>yes|no) .*?structure (?P<structure>[\d.]+) \(around [\d.]+\), layout (?P<layout>\w+), "
    r"early (?P<early>\w+), continuing (?P<continuing>\w+): (?P<decision>.*) \((?P<decoded>\d+) decoded\)$")


def triggers(gop):
    """What sent a GOP to be decoded, by the names the docs use."""
    fired = {
        "colour": gop["jump"] is not None,
        "spike": gop["spike"] == "yes",
        "layout": gop["layout"] == "yes",
        "activity": gop["layout"] == "activity",
        "early": gop["early"] == "yes",
        "continuing": gop["continuing"] == "yes",
    }
    return "+".join(name for name, on in fired.items() if on) or "other"


def decoded_gops(binary, clip, truth):
    """Each GOP decoded beyond its sample: its debug line's fields, what sent it, the changes in it."""
    env = dict(os.environ, MOMENTS_DEBUG_SCAN="1")
    scan = subprocess.run([binary, "analyze", clip, "--json"], capture_output=True, text=True, env=env, check=True)
    fps = truth["fps"]
    for line in scan.stderr.splitlines():
        match = GOP_LINE.match(line)
        if not match or match["decision"].startswith(("sampled", "cut on the next keyframe")):
            continue
        gop = match.groupdict()
        first = float(gop["time"]) * fps
        last = first + int(gop["packets"]) - 1
        gop["changes"] = [t for t in truth["transitions"] if t["end"] >= first - 2 and t["start"] <= last + 2]
        gop["triggers"] = triggers(gop)
        yield gop


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("clips", nargs="*", help="clips (default: the tuned ones scripts/bench-scenes has built)")
    parser.add_argument("--codec", default="h264", choices=["h264", "hevc", "x264"])
    parser.add_argument("--all", action="store_true", help="a line for every decoded GOP, not only the idle ones")
    parser.add_argument("--binary", default=".build/release/moments")
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/moments/bench-scenes"))
    args = parser.parse_args()

    names = args.clips or [name for name, spec in CLIPS.items() if spec.get("tuned")]
    totals = {}
    for name in names:
        clip, truth_path = clip_paths(args.cache, name, args.codec)
        if not os.path.exists(truth_path):
            print(f"{name}: not built in {args.codec} (scripts/bench-scenes --codec {args.codec} --clips {name})", file=sys.stderr)
            continue
        with open(truth_path) as f:
            truth = json.load(f)
        for gop in decoded_gops(args.binary, clip, truth):
            decoded = int(gop["decoded"])
            row = totals.setdefault(gop["triggers"], {"gops": 0, "frames": 0, "with_change": 0, "idle_frames": 0})
            row["gops"] += 1
            row["frames"] += decoded
            row["with_change"] += bool(gop["changes"])
            row["idle_frames"] += 0 if gop["changes"] else decoded
            if args.all or not gop["changes"]:
                changes = ", ".join(f"{t['label']} at {t['start']}" for t in gop["changes"]) or "no change"
                print(f"{name} GOP {gop['index']} at {float(gop['time']):.1f} s: {gop['triggers']}; colour {gop['colour']} "
                      f"(typical {gop['typical']}), structure {gop['structure']}, activity {gop['activity']}; "
                      f"{gop['decision']}, {decoded} decoded; {changes}")
    print(f"{'sent by':<34} {'GOPs':>5} {'frames':>7} {'with a change':>14} {'frames in GOPs with none':>25}")
    for label, row in sorted(totals.items(), key=lambda item: -item[1]["idle_frames"]):
        print(f"{label:<34} {row['gops']:>5} {row['frames']:>7} {row['with_change']:>14} {row['idle_frames']:>25}")
    summed = {key: sum(row[key] for row in totals.values()) for key in ("gops", "frames", "with_change", "idle_frames")}
    print(f"{'all':<34} {summed['gops']:>5} {summed['frames']:>7} {summed['with_change']:>14} {summed['idle_frames']:>25}")


if __name__ == "__main__":
    main()
