"""People first, measured: the people part of scripts/bench-quality.

A clip of hand-held shots made here from photographs in scikit-image's wheel (PyPI; never
committed): half show a person (the astronaut portrait, wide, close and mirrored; the
cameraman, looking through his camera), half show scenery (coffee, a rocket, a cat, a motorcycle,
galaxies, grass, a brick wall). Every shot has the same
camera sway and the same pink noise under it (16 shots of 5 s), so only the people set them apart, and which
seconds show a person follows from how the clip was made.

For each highlight length it prints the share of the highlight that shows a person, by this
build with faces and by the same build without them (FACE_CASCADE empty, as the engine was before
faces), and how many of the seconds the analysis found a face in are people's seconds.
"""

import argparse
import json
import os
import subprocess
import zipfile

SHOT_SECONDS = 5
# (image, crop centre x, y as fractions, crop width as a fraction of the image's width, mirrored, person)
SHOTS = [
    ("astronaut.png", 0.44, 0.30, 0.875, False, True),
    ("coffee.png", 0.5, 0.5, 0.8, False, False),
    ("camera.png", 0.45, 0.35, 0.875, False, True),
    ("rocket.jpg", 0.5, 0.5, 0.8, False, False),
    ("astronaut.png", 0.44, 0.25, 0.55, False, True),
    ("chelsea.png", 0.5, 0.5, 0.8, False, False),
    ("astronaut.png", 0.56, 0.30, 0.875, True, True),
    ("motorcycle_left.png", 0.5, 0.5, 0.8, False, False),
    ("astronaut.png", 0.56, 0.25, 0.55, True, True),
    ("hubble_deep_field.jpg", 0.5, 0.5, 0.8, False, False),
    ("camera.png", 0.55, 0.35, 0.875, True, True),
    ("grass.png", 0.5, 0.5, 0.8, False, False),
    ("astronaut.png", 0.40, 0.32, 0.95, False, True),
    ("brick.png", 0.5, 0.5, 0.8, False, False),
    ("astronaut.png", 0.47, 0.22, 0.45, False, True),
    ("rocket.jpg", 0.3, 0.4, 0.6, True, False),
]


def images(wheel, into):
    os.makedirs(into, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        for name in {s[0] for s in SHOTS}:
            path = os.path.join(into, name)
            if not os.path.exists(path):
                with open(path, "wb") as out:
                    out.write(z.read("skimage/data/" + name))


def size(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", path],
                         capture_output=True, text=True, check=True).stdout
    w, h = out.strip().split(",")[:2]
    return int(w), int(h)


def make_clip(pictures, out):
    if os.path.exists(out):
        return out
    parts = []
    for k, (image, cx, cy, share, mirrored, _) in enumerate(SHOTS):
        path = os.path.join(pictures, image)
        w, h = size(path)
        cw = int(w * share) // 2 * 2
        ch = int(cw * 9 / 16) // 2 * 2
        # The same sway in every shot: 2 % of the crop across, 1.5 % down, as a hand holds a phone.
        ax, ay = 0.02 * cw, 0.015 * ch
        x0 = min(max(0, cx * w - cw / 2), w - cw - ax)
        y0 = min(max(0, cy * h - ch / 2), h - ch - ay)
        x0, y0 = max(ax, x0), max(ay, y0)
        crop = (f"crop={cw}:{ch}:x='{x0:.1f}+{ax:.1f}*sin(2*PI*t*0.7+{k})':y='{y0:.1f}+{ay:.1f}*sin(2*PI*t*0.9+{k})'")
        chain = ("hflip," if mirrored else "") + crop + ",scale=1280:720,format=yuv420p"
        part = f"{out}.part{k}.mp4"
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-framerate", "30", "-t", str(SHOT_SECONDS), "-i", path,
                        "-f", "lavfi", "-t", str(SHOT_SECONDS), "-i", f"anoisesrc=color=pink:amplitude=0.05:seed={k}",
                        "-vf", chain, "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-c:a", "aac", "-ar", "48000",
                        "-shortest", part], check=True)
        parts.append(part)
    listing = out + ".txt"
    with open(listing, "w") as f:
        f.writelines(f"file '{os.path.abspath(p)}'\n" for p in parts)
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", listing, "-c", "copy", out + ".partial.mp4"],
                   check=True)
    os.rename(out + ".partial.mp4", out)
    for p in parts + [listing]:
        os.remove(p)
    return out


def person_at(t):
    return SHOTS[min(len(SHOTS) - 1, int(t // SHOT_SECONDS))][5]


def person_share(segments):
    total = sum(e - s for s, e in segments)
    shown = 0.0
    for s, e in segments:
        t = s
        while t < e - 1e-9:
            step = min(e, (int(t // SHOT_SECONDS) + 1) * SHOT_SECONDS) - t
            shown += step if person_at(t + step / 2) else 0
            t += step
    return shown / total if total else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--moments", required=True)
    parser.add_argument("--wheel", required=True)
    parser.add_argument("--cache", required=True)
    args = parser.parse_args()
    pictures = os.path.join(args.cache, "people", "pictures")
    images(args.wheel, pictures)
    clip = make_clip(pictures, os.path.join(args.cache, "people", "people-v2.mp4"))
    scratch = os.path.join(args.cache, "people", "scratch")
    os.makedirs(scratch, exist_ok=True)
    runs = [("faces", dict(os.environ)), ("no faces", {**os.environ, "FACE_CASCADE": ""})]

    analysis = json.loads(subprocess.run([args.moments, "analyze", clip, "--json"], capture_output=True, text=True, check=True).stdout)
    seconds = analysis["seconds"]
    found = [s["time"] for s in seconds if s["faces"] > 0]
    people = [s["time"] for s in seconds if person_at(s["time"] + 0.5) and int(s["time"]) % SHOT_SECONDS not in (0, SHOT_SECONDS - 1)]
    astronaut = [t for t in people if SHOTS[int(t // SHOT_SECONDS)][0] == "astronaut.png"]
    print(f"people clip: {len(SHOTS)} shots of {SHOT_SECONDS} s, half with a person; faces found in {len(found)} seconds, "
          f"{sum(1 for t in found if person_at(t + 0.5))} of them a person's; "
          f"{sum(1 for t in astronaut if t in found)} of {len(astronaut)} inner seconds of the astronaut's shots, "
          f"{sum(1 for t in people if t in found)} of {len(people)} of all people's shots")
    for target in [10, 20, 30]:
        row = []
        for label, env in runs:
            report_path = os.path.join(scratch, "report.json")
            subprocess.run([args.moments, "highlight", clip, "-o", os.path.join(scratch, "out.mp4"), "--duration", str(target),
                            "--report", report_path], check=True, capture_output=True, env=env)
            report = json.load(open(report_path))
            segments = [(s["start"], s["end"]) for s in report["segments"]]
            row.append(f"{label} {100 * person_share(segments):3.0f} %")
        print(f"  {target} s highlight, share showing a person (the source: 50 %): " + ", ".join(row))


if __name__ == "__main__":
    main()
