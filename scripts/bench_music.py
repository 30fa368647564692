#!/usr/bin/env python3
"""scripts/bench-music's measurements: Moments' beat tracker beside aubio's on the same files.

Click tracks are written here with every beat known; music-free sounds with ffmpeg and espeak-ng;
real music is the first minute of each soundtrack of freedroid-data and pingus-data (the shell
script fetches them) rendered to WAV by ffmpeg.
"""
import argparse
import array
import glob
import json
import math
import os
import random
import statistics
import subprocess
import wave

RATE = 22050


def run(arguments, check=True):
    return subprocess.run(arguments, check=check, capture_output=True, text=True)


def write_wav(path, samples):
    data = array.array("h", (max(-32767, min(32767, int(s * 32767))) for s in samples))
    with wave.open(path, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(data.tobytes())


def clicks(beats, seconds, seed):
    """A metronome on `beats`: 20 ms clicks of 1 kHz, the bar's first of 1.5 kHz and louder, over
    faint noise."""
    rng = random.Random(seed)
    samples = [rng.uniform(-0.002, 0.002) for _ in range(int(seconds * RATE))]
    for k, t in enumerate(beats):
        start = int(t * RATE)
        hz, gain = (1500, 0.5) if k % 4 == 0 else (1000, 0.3)
        for n in range(int(0.02 * RATE)):
            if start + n < len(samples):
                x = n / RATE
                samples[start + n] += gain * math.sin(2 * math.pi * hz * x) * math.exp(-150 * x)
    return samples


def steady(first, tempo, until):
    beats, t = [], first
    while t < until:
        beats.append(t)
        t += 60 / tempo
    return beats


def moments_beats(binary, path):
    result = run([binary, "music", "analyze", path, "--json"], check=False)
    if result.returncode != 0:
        return None, None, result.stderr.strip()
    analysis = json.loads(result.stdout)
    return analysis.get("tempo"), analysis["beats"], None


def aubio_beats(path):
    beats = [float(line) for line in run(["aubio", "beat", path]).stdout.split() if line.strip()]
    tempo_lines = run(["aubio", "tempo", path]).stdout.strip().splitlines()
    tempo = float(tempo_lines[-1].split()[0]) if tempo_lines else None
    return tempo, beats


def nearest(t, reference):
    return min((abs(t - r) for r in reference), default=math.inf)


def levels(reference):
    """The reference beats at their own level, the double (midpoints added) and the half (every
    other one, either phase)."""
    double = sorted(reference + [(a + b) / 2 for a, b in zip(reference, reference[1:])])
    return [reference, double, reference[0::2], reference[1::2]]


def f_measure(found, reference, tolerance):
    if not found or not reference:
        return 0.0
    hits = sum(1 for t in found if nearest(t, reference) <= tolerance)
    recalled = sum(1 for r in reference if nearest(r, found) <= tolerance)
    precision, recall = hits / len(found), recalled / len(reference)
    return 0.0 if hits == 0 else 2 * precision * recall / (precision + recall)


def against(found, truth, tolerance=0.05):
    """F-measure and median distance (ms) from each beat found to the nearest true beat, at the
    level (the beat, its double or its half) where the F-measure is best."""
    best = max(levels(truth), key=lambda reference: f_measure(found, reference, tolerance))
    distances = [nearest(t, best) for t in found]
    return f_measure(found, best, tolerance), 1000 * statistics.median(distances) if distances else math.inf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--cache", required=True)
    args = parser.parse_args()
    sounds = os.path.join(args.cache, "sounds")
    os.makedirs(sounds, exist_ok=True)

    print("Click tracks (30 s; beats known): F-measure at ±50 ms, median distance of a beat found to the true one")
    print(f"{'track':<28} {'moments':>22} {'aubio':>22}")
    rows = []
    for index, (tempo, second) in enumerate([(60, None), (90, None), (120, None), (150, None), (180, None),
                                             (100, 120), (140, 110), (75, 90)]):
        lead = 0.37 + 0.11 * index
        truth = steady(lead, tempo, 12 if second else 29.5)
        if second:
            truth += steady(truth[-1] + 60 / second, second, 29.5)
        name = f"clicks-{tempo}" + (f"-{second}" if second else "")
        path = os.path.join(sounds, name + ".wav")
        if not os.path.exists(path):
            write_wav(path, clicks(truth, 30, index))
        _, ours, error = moments_beats(args.bin, path)
        _, theirs = aubio_beats(path)
        (f1, d1), (f2, d2) = against(ours or [], truth), against(theirs, truth)
        rows.append((f1, d1, f2, d2))
        print(f"{name:<28} {f1:>9.2f} {d1:>8.1f} ms  {f2:>9.2f} {d2:>8.1f} ms" + (f"  ({error})" if error else ""))
    print(f"{'median':<28} {statistics.median(r[0] for r in rows):>9.2f} {statistics.median(r[1] for r in rows):>8.1f} ms  "
          f"{statistics.median(r[2] for r in rows):>9.2f} {statistics.median(r[3] for r in rows):>8.1f} ms")

    print()
    print("Music-free sounds (30 s): beats reported (goal 0)")
    free = {
        "pink-noise": ["-f", "lavfi", "-i", "anoisesrc=color=pink:amplitude=0.3:duration=30"],
        "brown-noise": ["-f", "lavfi", "-i", "anoisesrc=color=brown:amplitude=0.5:duration=30"],
        "sweep": ["-f", "lavfi", "-i", "aevalsrc=0.3*sin(2*PI*(100+50*t)*t):duration=30"],
        "room-tone": ["-f", "lavfi", "-i", "aevalsrc=0.02*sin(2*PI*50*t)+0.01*sin(2*PI*100*t):duration=30",
                      "-f", "lavfi", "-i", "anoisesrc=color=pink:amplitude=0.02:duration=30",
                      "-filter_complex", "amix=inputs=2"],
    }
    for name, arguments in free.items():
        path = os.path.join(sounds, name + ".wav")
        if not os.path.exists(path):
            run(["ffmpeg", "-v", "error", "-y"] + arguments + ["-ac", "1", "-ar", str(RATE), path])
    speech = os.path.join(sounds, "speech.wav")
    if not os.path.exists(speech):
        text = ("The boat left the harbour early in the morning. We watched it go, and then we walked back along the beach. "
                "Look at that, she is jumping into the water! Happy birthday to you, my dear friend. "
                "I can't believe how cold it is today. Come over here and see what the dog found. "
                "This is the best day of the whole summer holiday. Do you want to try again, or shall we go home?")
        run(["espeak-ng", "-v", "en-gb", "-s", "150", "-w", speech, text])
    print(f"{'sound':<28} {'moments':>10} {'aubio':>10}")
    for name in list(free) + ["speech"]:
        path = os.path.join(sounds, name + ".wav")
        _, ours, error = moments_beats(args.bin, path)
        _, theirs = aubio_beats(path)
        print(f"{name:<28} {len(ours or []):>10} {len(theirs):>10}" + (f"  ({error})" if error else ""))

    print()
    print("Real music (the first minute of each soundtrack): tempo, and Moments' beats within 70 ms of aubio's")
    print(f"{'track':<36} {'moments':>9} {'aubio':>9} {'agree':>7}")
    tree = os.path.join(args.cache, "tree")
    files = sorted(glob.glob(os.path.join(tree, "usr/share/games/pingus/data/music/*"))
                   + glob.glob(os.path.join(tree, "usr/share/games/freedroid/sound/*.mod"))
                   + glob.glob(os.path.join(tree, "usr/share/games/freedroid/sound/*.ogg")))
    agreements = []
    for source in files:
        name = os.path.basename(source)
        path = os.path.join(sounds, "music-" + name + ".wav")
        if not os.path.exists(path):
            if run(["ffmpeg", "-v", "error", "-y", "-i", source, "-t", "60", "-ac", "1", "-ar", str(RATE), path], check=False).returncode != 0:
                continue
        ours_tempo, ours, error = moments_beats(args.bin, path)
        if error and "too_short" in error:
            continue
        theirs_tempo, theirs = aubio_beats(path)
        agree = max((sum(1 for t in ours if nearest(t, reference) <= 0.07) / len(ours) for reference in levels(theirs)), default=0) if ours and theirs else 0
        if ours:
            agreements.append(agree)
        print(f"{name:<36} {ours_tempo or 0:>9.1f} {theirs_tempo or 0:>9.1f} {agree:>7.2f}" + ("  (no steady beat)" if not ours else ""))
    if agreements:
        print(f"{'median of tracks with a beat':<36} {'':>9} {'':>9} {statistics.median(agreements):>7.2f}")


if __name__ == "__main__":
    main()
