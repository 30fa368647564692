"""The benchmark of what people notice behind scripts/bench-quality.

Each clip of benchmarks/scenes.py (real footage, its shots known) gets a soundtrack made here:
sentences spoken by espeak-ng, with voices, speeds, pitches and pauses (0.3-1.5 s) drawn from a
seeded generator, over room noise or over real music. Every sentence's span is where its audible
samples were placed, so the edges and sentences below follow from how the clip was made.
"""

import argparse
import array
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenes as bench_scenes  # noqa: E402

RATE = 22050  # espeak-ng's own rate
SENTENCES = [
    "The boat left the harbour early in the morning.", "We watched it go, and then we walked back along the beach.",
    "Look at that, she is jumping into the water!", "Happy birthday to you, my dear friend.",
    "I can't believe how cold it is today.", "Come over here and see what the dog found.",
    "This is the best day of the whole summer holiday.", "Do you want to try again, or shall we go home?",
    "Wait, wait, let me get my camera ready first.", "Everyone say cheese, one, two, three.",
    "Grandma made her famous apple pie for everyone.", "Hold on tight, here comes the big wave!",
    "Can you see the mountains from up there?", "That was amazing, let's do it one more time.",
]
VOICES = ["en-us", "en-gb", "en-us+f2", "en-gb+m3", "en-us+f4", "en-gb-scotland+f3", "en-us+m7"]
MUSIC = ["freedroid/sound/Paradroid.ogg", "pingus/data/music/goin_march.it", "pingus/data/music/pingus-5.it"]
CLIPS = ["plain-a", "plain-b", "hard-a", "hard-b"]


def spoken(text, voice, speed, pitch):
    out = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", text],
                         capture_output=True, check=True).stdout
    # espeak-ng writes its maximum data size when it writes to a pipe: read the samples after the header.
    samples = array.array("h", out[44:len(out) - (len(out) - 44) % 2])
    audible = [i for i, s in enumerate(samples) if abs(s) > 327]
    return samples[audible[0]:audible[-1] + 1] if audible else array.array("h")


def speech_track(seconds, rng):
    """Sentences with pauses, about three quarters of the time; (16-bit samples, [(start, end)])."""
    track = array.array("h", bytes(2 * int(seconds * RATE)))
    spans, t = [], rng.uniform(0.3, 1.5)
    while True:
        s = spoken(rng.choice(SENTENCES), rng.choice(VOICES), rng.randint(130, 185), rng.randint(25, 75))
        length = len(s) / RATE
        if t + length > seconds - 0.5:
            break
        at = int(t * RATE)
        track[at:at + len(s)] = s
        spans.append((t, t + length))
        t += length + rng.uniform(0.3, 1.5)
    return track, spans


def duration(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path],
                         capture_output=True, text=True, check=True).stdout
    return float(out.strip())


def make_clip(name, background, args, rng):
    """The clip with its soundtrack, and the sentences' spans; cached by name, background and seed."""
    clip, truth = bench_scenes.build(name, bench_scenes.CLIPS[name], args.footage, args.cache)
    out = os.path.join(args.cache, "quality", f"{name}-{background}-{args.seed}.mp4")
    spans_path = out + ".speech.json"
    if os.path.exists(out) and os.path.exists(spans_path):
        return out, json.load(open(spans_path)), truth
    os.makedirs(os.path.dirname(out), exist_ok=True)
    seconds = duration(clip)
    track, spans = speech_track(seconds, rng)
    voice = out + ".voice.wav"
    with wave.open(voice, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(track.tobytes())
    if background == "room":
        under = ["-f", "lavfi", "-i", f"anoisesrc=color=pink:amplitude=0.02:seed={args.seed}:d={seconds}"]
        level = "-45"
    else:
        under = ["-stream_loop", "-1", "-i", os.path.join(args.music, "usr/share/games", rng.choice(MUSIC))]
        level = "-32"
    # The voice at -20 LUFS (integrated loudness, which leaves the pauses out), what is under it at
    # `level`, mixed without normalisation.
    graph = (f"[1:a]loudnorm=I=-20:LRA=20:TP=-2,aresample=48000,aformat=channel_layouts=mono[v];"
             f"[2:a]loudnorm=I={level}:LRA=20:TP=-2,aresample=48000,aformat=channel_layouts=mono,atrim=0:{seconds}[u];"
             f"[v][u]amix=inputs=2:normalize=0:duration=first[a]")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", clip, "-i", voice, *under, "-filter_complex", graph,
                    "-map", "0:v", "-map", "[a]", "-c:v", "copy", "-c:a", "aac", "-b:a", "160k", "-shortest",
                    out + ".partial.mp4"], check=True)
    os.rename(out + ".partial.mp4", out)
    os.remove(voice)
    json.dump(spans, open(spans_path, "w"))
    return out, spans, truth


def shots_of(truth):
    """The clip's shots (seconds) from its transitions."""
    fps, edges = truth["fps"], [0.0]
    for t in truth["transitions"]:
        edges.append(t["frame"] / fps)
    edges.append(truth["frames"] / fps)
    return list(zip(edges, edges[1:]))


def measure(binary, clip, spans, truth, codec, scratch):
    report_path = os.path.join(scratch, "report.json")
    command = [binary, "highlight", clip, "-o", os.path.join(scratch, "out.mp4"), "--duration", "30", "--report", report_path]
    if codec == "h264":
        command += ["--codec", "h264"]
    started = time.monotonic()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.monotonic() - started
    report = json.load(open(report_path))
    segments = [(s["start"], s["end"]) for s in report["segments"]]
    end = duration(clip)
    edges = [e for s in segments for e in s if 0.05 < e < end - 0.05]
    inside = sum(1 for e in edges if any(a < e < b for a, b in spans))
    played = [(a, b) for a, b in spans if any(s < b and a < e for s, e in segments)]
    cut = sum(1 for a, b in played if not any(s <= a + 1e-6 and e >= b - 1e-6 for s, e in segments))
    # A moment shown twice: two segments of one shot less than a second apart (the shot continued).
    shots = shots_of(truth)
    def shot(s, e):
        return next((k for k, (a, b) in enumerate(shots) if min(e, b) - max(s, a) >= 0.5 * (e - s)), None)
    twice = sum(1 for (s1, e1), (s2, e2) in zip(segments, segments[1:]) if shot(s1, e1) == shot(s2, e2) and s2 - e1 < 1.0)
    total = sum(e - s for s, e in segments)
    speech = sum(max(0, min(e, b) - max(s, a)) for s, e in segments for a, b in spans)
    return {"edges": len(edges), "inside": inside, "played": len(played), "cut": cut,
            "twice": twice, "speech_share": speech / total if total else 0,
            "total": total, "mode": report["render"]["mode"], "wall": wall}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--moments", required=True)
    parser.add_argument("--before", help="the engine before the speech detector (left out: this build alone)")
    parser.add_argument("--cache", required=True)
    parser.add_argument("--footage", required=True)
    parser.add_argument("--music", required=True)
    parser.add_argument("--clips", default=",".join(CLIPS))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    # A scratch folder of this run's own: runs for other seeds or builds may go on beside it.
    os.makedirs(os.path.join(args.cache, "quality"), exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="scratch-", dir=os.path.join(args.cache, "quality"))
    totals = {}
    print(f"{'clip':22s} {'engine':7s} {'codec':5s} {'path':6s} {'edges in speech':>16s} {'sentences cut':>14s} "
          f"{'twice':>6s} {'speech':>7s} {'length':>7s}")
    for name in args.clips.split(","):
        for background in ["room", "music"]:
            rng = random.Random(f"{args.seed}-{name}-{background}")
            clip, spans, truth = make_clip(name, background, args, rng)
            for codec in ["auto", "h264"]:
                for label, binary in ([("before", args.before)] if args.before else []) + [("now", args.moments)]:
                    m = measure(binary, clip, spans, truth, codec, scratch)
                    t = totals.setdefault((label, codec), {"edges": 0, "inside": 0, "played": 0, "cut": 0, "twice": 0})
                    for key in t:
                        t[key] += m[key]
                    print(f"{name + ' / ' + background:22s} {label:7s} {codec:5s} {m['mode']:6s} "
                          f"{m['inside']:>6d} of {m['edges']:<3d}    {m['cut']:>5d} of {m['played']:<3d}   "
                          f"{m['twice']:>4d}    {100 * m['speech_share']:5.0f} % {m['total']:6.2f}s", flush=True)
    print()
    for (label, codec), t in sorted(totals.items()):
        print(f"{label:7s} {codec:5s}: edges inside sentences {100 * t['inside'] / max(1, t['edges']):.1f} % "
              f"({t['inside']} of {t['edges']}), sentences cut short {100 * t['cut'] / max(1, t['played']):.1f} % "
              f"({t['cut']} of {t['played']}), moments shown twice {t['twice']}")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
