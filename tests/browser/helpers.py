"""Helpers shared by the per-part widget tests (test_part0, test_part1_model, test_part1_tokens,
test_part5, test_widget_runtime): import them with ``from helpers import ...`` (pytest puts this
folder on ``sys.path``; it has no ``__init__.py``). Fixtures stay in conftest.py.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from urllib.parse import urlsplit

#: Milliseconds to wait for Pyodide + the wheel to load (a few seconds here; CI is slower).
LIVE_TIMEOUT_MS = 90_000
#: Milliseconds to wait for one recomputation.
RECOMPUTE_TIMEOUT_MS = 15_000
#: Schemes the widget tests count as local besides the loopback hosts (conftest's teardown check
#: also allows the browser's own chrome-extension: and devtools: schemes).
LOCAL_SCHEMES = {"file", "data", "blob", "about"}
#: Each test worker's server listens on its own address of 127.0.0.0/8 (conftest's ``server_host``).
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")


def is_local(url: str) -> bool:
    """True when ``url`` stays on this machine: a local scheme or a host of 127.0.0.0/8."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    try:
        return parts.hostname is not None and ipaddress.ip_address(parts.hostname) in LOOPBACK
    except ValueError:
        return False


def page_path(site_dir: Path, name: str) -> str:
    """The built page's path: ``name.html`` (offline plugin) or ``name/`` (directory URLs)."""
    return f"{name}.html" if (site_dir / f"{name}.html").is_file() else f"{name}/"


def page_url(site_dir: Path, server: str, name: str) -> str:
    """The served URL of the page built from ``docs/<name>.md``."""
    return server + page_path(site_dir, name)


def go_live(page, url: str, root: str, *, check_static: bool = True):
    """Open ``url``, scroll the widget ``root`` (a CSS selector) into view and wait until it is live.

    With ``check_static``, first assert that the page arrived with the pre-rendered (static) widget.
    Returns the widget's locator.
    """
    page.goto(url)
    w = page.locator(root)
    if check_static:
        assert w.get_attribute("data-state") == "static"
    w.scroll_into_view_if_needed()
    page.wait_for_selector(f'{root}[data-state="live"]', timeout=LIVE_TIMEOUT_MS)
    return w


def next_frames(page) -> None:
    """Wait until the browser has drawn two more frames (style changes applied, skipped blocks that
    came on screen drawn: content-visibility in docs/assets/site.css)."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def stat_number(page, root: str, label: str, *, exact: bool = True):
    """The number of the stat in ``root`` whose label is ``label`` (or, unless ``exact``, starts with it).

    Poll it with Playwright's ``expect``, which does not evaluate strings (the site's CSP forbids that).
    """
    pattern = "^" + re.escape(label) + ("$" if exact else "")
    label_loc = page.locator(".descent-stat__label", has_text=re.compile(pattern))
    return page.locator(f"{root} .descent-stat").filter(has=label_loc).locator(".descent-stat__number")
