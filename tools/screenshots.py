"""Screenshots of built pages for a person to look at: light, dark and a phone's width.

    python tools/screenshots.py --site site --out /tmp/shots part-0-the-prompt reference/models

Serves ``--site`` with the site's own server (:mod:`descent.site.serve`, on a free port of
127.0.0.1), opens each page in Debian's chromium through Playwright and writes
``<page>-<light|dark|phone>.png`` (full page) into ``--out``. It checks nothing: the tests check;
this is for the eye (reviews, pull requests). Pages are paths without ``.html``; with none given,
every part.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from descent.site.serve import make_server

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
PARTS = ["index", "part-0-the-prompt", "part-1-the-transformer", "part-2-weights-as-numbers",
         "part-3-serving-software", "part-4-hardware", "part-5-the-whole-descent"]
FORMS = {
    "light": {"viewport": {"width": 1280, "height": 900}},
    "dark": {"viewport": {"width": 1280, "height": 900}, "color_scheme": "dark"},
    "phone": {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/screenshots.py", description=__doc__.split("\n")[0])
    parser.add_argument("--site", default="site", help="the built site (default: site)")
    parser.add_argument("--out", required=True, help="folder for the PNG files (made if missing)")
    parser.add_argument("pages", nargs="*", help="page paths without .html (default: every part)")
    args = parser.parse_args(argv)
    site, out = Path(args.site), Path(args.out)
    pages = args.pages or PARTS
    missing = [p for p in pages if not (site / f"{p}.html").is_file()]
    if not (site / "index.html").is_file() or missing:
        print(f"screenshots: no built page {missing or ['index']} in {site}: build the site first (nox -s build)",
              file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    server = make_server(str(site), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            for form, context_args in FORMS.items():
                context = browser.new_context(**context_args)
                page = context.new_page()
                for p in pages:
                    page.goto(base + p + ".html")
                    page.wait_for_load_state("load")
                    path = out / f"{p.replace('/', '-')}-{form}.png"
                    page.screenshot(path=str(path), full_page=True)
                    print(path)
                context.close()
            browser.close()
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
