#!/usr/bin/env bash
# Renders a run's report.html with headless Chromium into a PNG (the README's picture of the report):
#   scripts/report_screenshot.sh RUN_DIR OUT.png [WIDTH,HEIGHT]
# Chromium is Debian's `chromium` (scripts/install-deps.sh installs it). A fresh profile folder is used and
# removed, so nothing from earlier runs or the user's browser leaks in; networking and updates are off.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 RUN_DIR OUT.png [WIDTH,HEIGHT]" >&2
  exit 2
fi
run_dir=$1
out=$2
size=${3:-1280,1700}
report="$run_dir/report.html"
if [ ! -f "$report" ]; then
  echo "report_screenshot: '$report' does not exist (run verl demo or verl train with the html logger)" >&2
  exit 1
fi
if ! command -v chromium > /dev/null; then
  echo "report_screenshot: chromium is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
sandbox=()
if [ "$(id -u)" -eq 0 ]; then sandbox=(--no-sandbox); fi  # Chromium refuses to run as root with its sandbox
out_abs=$(realpath -m "$out")
mkdir -p "$(dirname "$out_abs")"
timeout 120 chromium --headless "${sandbox[@]}" --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$profile" \
  --window-size="$size" --screenshot="$out_abs" "file://$(realpath "$report")" 2> "$profile/chromium.log" || {
  cat "$profile/chromium.log" >&2
  exit 1
}
if [ ! -s "$out_abs" ]; then
  echo "report_screenshot: chromium wrote no screenshot" >&2
  cat "$profile/chromium.log" >&2
  exit 1
fi
echo "$out_abs"
