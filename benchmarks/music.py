#!/usr/bin/env python3
"""scripts/bench-music's measurements: Moments' beat tracker beside aubio's on the same files.

Click tracks are written here with every beat known; music-free sounds with ffmpeg and espeak-ng;
real music is the first minute of each soundtrack of freedroid-data and pingus-data (the shell
script fetches them). The modules among them (MOD, S3M, IT) are rendered here by libopenmpt, the
library FFmpeg reads them with, which also says when each row of the score starts: their true beats
are the rows a beat apart (the file's own rows-per-beat highlight for IT, four otherwise), so real
music is measured against its score and not against another tracker.
"""
import argparse
import array
import ctypes
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


class Score:
    """libopenmpt through its C API: a module's sound and the start of every row, for its first
    `seconds`."""
    library = None

    @classmethod
    def load(cls):
        if cls.library is None:
            lib = ctypes.CDLL("libopenmpt.so.0")
            lib.openmpt_module_create_from_memory2.restype = ctypes.c_void_p
            lib.openmpt_module_create_from_memory2.argtypes = [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_void_p] * 4 + [
                ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_void_p]
            for name in ("openmpt_module_get_current_row", "openmpt_module_get_current_order"):
                getattr(lib, name).argtypes = [ctypes.c_void_p]
                getattr(lib, name).restype = ctypes.c_int32
            lib.openmpt_module_read_float_mono.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_size_t, ctypes.POINTER(ctypes.c_float)]
            lib.openmpt_module_read_float_mono.restype = ctypes.c_size_t
            lib.openmpt_module_destroy.argtypes = [ctypes.c_void_p]
            cls.library = lib
        return cls.library

    @classmethod
    def render(cls, source, wav, seconds=60):
        """Writes the module's sound to `wav` and returns its true beats. Rows are read in chunks of
        one millisecond: a row's start is known to within one."""
        cached = wav + ".beats.json"
        if os.path.exists(wav) and os.path.exists(cached):
            with open(cached) as f:
                return json.load(f)
        lib = cls.load()
        data = open(source, "rb").read()
        error = ctypes.c_int(0)
        module = lib.openmpt_module_create_from_memory2(data, len(data), None, None, None, None, ctypes.byref(error), None, None)
        if not module:
            return None
        chunk = RATE // 1000
        buffer = (ctypes.c_float * chunk)()
        samples, rows, last, done = array.array("f"), [], None, 0
        while done < seconds * RATE:
            start = done
            count = lib.openmpt_module_read_float_mono(module, RATE, chunk, buffer)
            if count == 0:
                break
            position = (lib.openmpt_module_get_current_order(module), lib.openmpt_module_get_current_row(module))
            if position != last:
                rows.append((start / RATE, position[1]))
                last = position
            samples.extend(buffer[:count])
            done += count
        lib.openmpt_module_destroy(module)
        per_beat = data[0x1E] if data[:4] == b"IMPM" and data[0x1E] > 0 else 4
        beats = [t for t, row in rows if row % per_beat == 0]
        # A jump into the middle of a pattern (or rows stretched by a pattern delay) leaves the
        # score's rows without a beat's meaning: keep the beats up to the first gap of over twice
        # the usual one, and measure only there.
        if len(beats) > 2:
            usual = statistics.median(b - a for a, b in zip(beats, beats[1:]))
            gap = next((k for k in range(1, len(beats)) if beats[k] - beats[k - 1] > 2 * usual), len(beats))
            beats = beats[:gap]
        write_wav(wav, samples)
        with open(cached, "w") as f:
            json.dump(beats, f)
        return beats


def within(found, truth):
    """The times of `found` inside the stretch `truth` covers (half a beat either side)."""
    if len(truth) < 2:
        return found
    half = (truth[1] - truth[0]) / 2
    return [t for t in found if truth[0] - half <= t <= truth[-1] + half]


def is_module(path):
    return path.lower().endswith((".mod", ".s3m", ".it", ".xm"))


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
    parser.add_argument("--only-highlights", action="store_true", help="skip the beat tracking sections")
    args = parser.parse_args()
    sounds = os.path.join(args.cache, "sounds")
    os.makedirs(sounds, exist_ok=True)

    tree = os.path.join(args.cache, "tree")
    files = sorted(glob.glob(os.path.join(tree, "usr/share/games/pingus/data/music/*"))
                   + glob.glob(os.path.join(tree, "usr/share/games/freedroid/sound/*.mod"))
                   + glob.glob(os.path.join(tree, "usr/share/games/freedroid/sound/*.ogg")))
    if not args.only_highlights:
        trackers(args, sounds, files)
    highlights(args.bin, sounds, files)


def trackers(args, sounds, files):
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
    print("Real music, the first minute of each module, against its score: tempo, F-measure at +-70 ms and the")
    print("median distance of a beat found to the true one, at the level (the score's beat, its half or its")
    print("double) each tracker chose")
    print(f"{'track':<30} {'score':>6} {'moments':>26} {'aubio':>26}")
    rows, missed = [], []
    for source in files:
        if not is_module(source):
            continue
        name = os.path.basename(source)
        path = os.path.join(sounds, "score-" + name + ".wav")
        truth = Score.render(source, path)
        if not truth or len(truth) < 8:
            continue
        ours_tempo, ours, error = moments_beats(args.bin, path)
        if error and "too_short" in error:
            continue
        theirs_tempo, theirs = aubio_beats(path)
        period = statistics.median(b - a for a, b in zip(truth, truth[1:]))
        (f1, d1), (f2, d2) = against(within(ours or [], truth), truth, 0.07), against(within(theirs, truth), truth, 0.07)
        if ours:
            rows.append((f1, d1, f2, d2))
        else:
            missed.append((f2, d2))
        mine = f"{ours_tempo:>7.1f} {f1:>6.2f} {d1:>7.1f} ms" if ours else f"{'no steady beat':>26}"
        print(f"{name:<30} {60 / period:>6.1f} {mine} {theirs_tempo or 0:>7.1f} {f2:>6.2f} {d2:>7.1f} ms")
    if rows:
        print(f"{'median, tracks Moments beats':<30} {'':>6} {'':>7} {statistics.median(r[0] for r in rows):>6.2f} "
              f"{statistics.median(r[1] for r in rows):>7.1f} ms {'':>7} {statistics.median(r[2] for r in rows):>6.2f} "
              f"{statistics.median(r[3] for r in rows):>7.1f} ms")
    if missed:
        print(f"{'median, the others':<30} {'':>6} {'':>26} {'':>7} {statistics.median(r[0] for r in missed):>6.2f} "
              f"{statistics.median(r[1] for r in missed):>7.1f} ms")


def decoded(path, rate=8000):
    """A file's sound as mono floats, decoded by ffmpeg."""
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-ac", "1", "-ar", str(rate), "-f", "f32le", "-"],
                         check=True, capture_output=True).stdout
    return array.array("f", raw)


def loudness(path):
    text = run(["ffmpeg", "-hide_banner", "-nostats", "-i", path, "-af", "ebur128", "-f", "null", "-"]).stderr
    summary = text[text.rindex("Integrated loudness:"):]
    return float(summary.split("I:")[1].split("LUFS")[0])


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def highlights(binary, sounds, real):
    """30 s highlights of a 60 s video (room sound) under each click track and under real music, and
    of a video with speech under three tracks: where the cuts fall against the beat, how loud the
    result is, and how far the music goes under the speech."""
    video = os.path.join(sounds, "video.mp4")
    if not os.path.exists(video):
        run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=60",
             "-f", "lavfi", "-i", "anoisesrc=color=pink:amplitude=0.03:duration=60", "-vf", "hue=h=t*40",
             "-c:v", "libx264", "-g", "30", "-c:a", "aac", "-shortest", video])
    speech_video = os.path.join(sounds, "speech.mp4")
    if not os.path.exists(speech_video):
        run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=40",
             "-i", os.path.join(sounds, "speech.wav"), "-af", "apad", "-vf", "hue=h=t*40",
             "-c:v", "libx264", "-g", "30", "-c:a", "aac", "-t", "40", speech_video])
    out = os.path.join(sounds, "highlight.mp4")
    report = os.path.join(sounds, "highlight.json")

    def make(source, track):
        result = run([binary, "highlight", source, "-o", out, "--duration", "30", "--music", track, "--report", report], check=False)
        if result.returncode != 0:
            return None
        with open(report) as f:
            whole = json.load(f)
        whole["music"]["segments"] = whole["segments"]
        return whole["music"]

    print()
    print("Highlights with music (30 s of a 60 s video): distance from each cut to the nearest true beat of the")
    print("track (click tracks: as made; modules: their score; the half-beats too where the tracker counted")
    print("twice as fast), and the integrated loudness of the result (target -16 LUFS)")
    print(f"{'track':<36} {'cuts':>5} {'median':>9} {'p90':>9} {'LUFS':>7}")
    distances_by_kind = {"click tracks": [], "modules, beat found": [], "modules, cut on onsets": []}
    levels_measured = []
    tracks = sorted(glob.glob(os.path.join(sounds, "clicks-*.wav")))
    scores = {}
    for source in real:
        if is_module(source):
            path = os.path.join(sounds, "score-" + os.path.basename(source) + ".wav")
            truth = Score.render(source, path)
            if truth and len(truth) >= 8:
                tracks.append(path)
                scores[path] = truth
    for track in tracks:
        if not os.path.exists(track):
            continue
        music = make(video, track)
        name = os.path.basename(track)
        if music is None:
            print(f"{name:<36} (refused)")
            continue
        if name.startswith("clicks-"):
            tempos = [int(x) for x in name[len("clicks-"):-len(".wav")].split("-")]
            position = [k for k, (t, s) in enumerate([(60, None), (90, None), (120, None), (150, None), (180, None),
                                                      (100, 120), (140, 110), (75, 90)]) if [t] + ([s] if s else []) == tempos][0]
            lead = 0.37 + 0.11 * position
            truth = steady(lead, tempos[0], 12 if len(tempos) > 1 else 29.5)
            if len(tempos) > 1:
                truth += steady(truth[-1] + 60 / tempos[1], tempos[1], 29.5)
            kind = "click tracks"
        else:
            truth = scores[track]
            kind = "modules, beat found" if music.get("cuts_on") == "beat" else "modules, cut on onsets"
        # Each cut in the track's time (a track shorter than the highlight repeats from its start after loop_end).
        def on_track(t):
            span = (music.get("loop_end") or math.inf) - music["track_start"]
            return music["track_start"] + (t % span if math.isfinite(span) else t)
        cuts = within([on_track(c["time"]) for c in music["cuts"]], truth)
        if not cuts:
            continue
        # Any true beat will do for a cut; the half-beats too where the tracker counted twice as fast.
        true_tempo = 60 / statistics.median(b - a for a, b in zip(truth, truth[1:]))
        reference = levels(truth)[1] if (music.get("tempo") or 0) > 1.5 * true_tempo else truth
        distances = [1000 * nearest(t, reference) for t in cuts]
        distances_by_kind[kind].extend(distances)
        level = loudness(out)
        levels_measured.append(level)
        print(f"{name:<36} {len(distances):>5} {statistics.median(distances):>6.1f} ms {percentile(distances, 0.9):>6.1f} ms {level:>7.1f}"
              + ("  (onsets)" if kind.endswith("onsets") else ""))
    for label, values in distances_by_kind.items():
        if values:
            print(f"{'all cuts, ' + label:<36} {len(values):>5} {statistics.median(values):>6.1f} ms {percentile(values, 0.9):>6.1f} ms")
    if levels_measured:
        print(f"{'loudness: farthest from -16 LUFS':<36} {max(abs(l + 16) for l in levels_measured):>25.1f} LU")

    print()
    print("Speech over music (40 s video of sentences, 30 s highlight): level of the speech over the music")
    print("where someone speaks (the music's part found by projecting the sound on the track; goal >= 10 dB)")
    spoken = json.loads(run([binary, "analyze", speech_video, "--json"]).stdout)["speech"]
    for track in [t for t in tracks if "score-" in t][:3] + [os.path.join(sounds, "clicks-120.wav")]:
        if not os.path.exists(track):
            continue
        music = make(speech_video, track)
        if music is None:
            continue
        rate = 8000
        heard, song = decoded(out, rate), decoded(track, rate)
        offset = int(round(music["track_start"] * rate))
        # Where the detector heard speech in the source, on the highlight's clock, 0.3 s inside each stretch.
        spans, elapsed = [], 0.0
        for segment in music["segments"]:
            for s in spoken:
                a, b = max(s["start"], segment["start"]), min(s["end"], segment["end"])
                if b - a > 0.6:
                    spans.append((elapsed + a - segment["start"] + 0.3, elapsed + b - segment["start"] - 0.3))
            elapsed += segment["end"] - segment["start"]
        # In each 100 ms window of speech: the music's part is the sound projected on the track there;
        # the rest is the speech.
        window = rate // 10
        speech_energy = music_energy = 0.0
        for first, last in spans:
            for start in range(int(first * rate), int(last * rate) - window, window):
                if offset + start + window > len(song) or start + window > len(heard):
                    break
                piece, reference = heard[start:start + window], song[offset + start:offset + start + window]
                power = sum(b * b for b in reference)
                gain = sum(a * b for a, b in zip(piece, reference)) / power if power > 1e-9 else 0.0
                speech_energy += sum((a - gain * b) ** 2 for a, b in zip(piece, reference))
                music_energy += gain * gain * power
        if music_energy > 0:
            print(f"{os.path.basename(track):<36} {10 * math.log10(speech_energy / music_energy):>6.1f} dB")


if __name__ == "__main__":
    main()
