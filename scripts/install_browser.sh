#!/usr/bin/env bash
# Install the headless browser the page tests drive (tests/routerlab/serve/test_page.py):
# Debian's chromium and chromium-driver, at /usr/bin/chromium and /usr/bin/chromedriver.
# Idempotent: when both are present it only reports their versions. Installing needs root (apt).
set -euo pipefail

CHROMIUM=/usr/bin/chromium
DRIVER=/usr/bin/chromedriver

if [ -x "$CHROMIUM" ] && [ -x "$DRIVER" ]; then
  echo "browser present: $("$CHROMIUM" --version 2>/dev/null || echo chromium); $("$DRIVER" --version 2>/dev/null | head -n1 || echo chromedriver)"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "error: $CHROMIUM or $DRIVER is missing and installing them needs root" >&2
  echo "  fix: sudo $0   (or: sudo apt-get install -y chromium chromium-driver)" >&2
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: apt-get not found; install chromium and its matching chromedriver by other means" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium chromium-driver
echo "browser installed: $("$CHROMIUM" --version 2>/dev/null); $("$DRIVER" --version | head -n1)"
