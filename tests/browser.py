"""Headless Chromium for the page tests, and what they check on a page: text overlaps, images, errors.

Debian's chromium and chromedriver (``scripts/install_browser.sh``); a test that needs them
skips with the install command when they are absent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
#: the page widths the layout is checked at: a laptop window and a half-screen one
WIDTHS = (1400, 900)


def need_browser() -> None:
    """Skip the calling test when the browser is not installed."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("/usr/bin/chromium is absent (install it with scripts/install_browser.sh)")


@contextmanager
def chromium(profile: Path, width: int = WIDTHS[0], height: int = 900) -> Iterator[Any]:
    """A headless Chromium driven by Selenium, in a window of ``width`` x ``height`` CSS pixels."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--force-device-scale-factor=1",
        f"--window-size={width},{height}",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def set_width(driver: Any, width: int, height: int = 900) -> None:
    """Resize the viewport (not the window, whose frame differs by platform) to ``width`` CSS pixels."""
    driver.set_window_size(width, height)
    inner = driver.execute_script("return window.innerWidth")
    if inner != width:  # the window's frame takes some pixels: add them
        driver.set_window_size(width + (width - inner), height)


#: every pair of visible text runs whose rectangles overlap by more than a pixel, as [text, text]
OVERLAPPING_TEXT_JS = """
const boxes = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const text = node.textContent.trim();
  if (!text || !node.parentElement) continue;
  const style = getComputedStyle(node.parentElement);
  if (style.visibility === "hidden" || style.display === "none") continue;
  const range = document.createRange();
  range.selectNodeContents(node);
  for (const r of range.getClientRects()) {
    if (r.width > 0 && r.height > 0) {
      boxes.push([r.left + scrollX, r.top + scrollY, r.right + scrollX, r.bottom + scrollY, text.slice(0, 60)]);
    }
  }
}
boxes.sort((a, b) => a[0] - b[0]);
const found = [];
for (let i = 0; i < boxes.length; i++) {
  for (let j = i + 1; j < boxes.length && boxes[j][0] < boxes[i][2] - 1; j++) {
    const a = boxes[i], b = boxes[j];
    const dx = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
    const dy = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
    if (dx > 1 && dy > 1) found.push([a[4], b[4]]);
  }
}
return found;
"""

#: each image: natural and shown size, its right edge, the viewport's width, loaded or not
IMAGES_JS = """
return [...document.images].map(img => {
  const r = img.getBoundingClientRect();
  return {natural: [img.naturalWidth, img.naturalHeight], shown: [r.width, r.height], right: r.right + scrollX,
          complete: img.complete, viewport: document.documentElement.clientWidth};
});
"""


def check_images(driver: Any, minimum: int) -> list[dict[str, Any]]:
    """Assert every image decoded, fits the page's width and is scaled as a whole; returns them.

    A figure scaled uniformly keeps its own layout, so labels that do not overlap in the PNG do
    not overlap on the page; one cut off at the right edge or squeezed would lose them.
    """
    images = driver.execute_script(IMAGES_JS)
    assert len(images) >= minimum, images
    for img in images:
        (nw, nh), (sw, sh) = img["natural"], img["shown"]
        assert img["complete"] and nw > 100 and nh > 100, img
        assert img["right"] <= img["viewport"] + 1, f"an image runs past the page's right edge: {img}"
        assert abs(sw / nw - sh / nh) < 0.01, f"an image is stretched: {img}"
        assert sw <= nw + 1, f"an image is blown up past its pixels: {img}"
    return images
