"""Reading rendered widget HTML in unit tests: import with ``from widget_html import stat, text``
(pytest puts tests/ on ``sys.path``; it has no ``__init__.py``).
"""

from __future__ import annotations

import html
import re


def text(markup: str) -> str:
    """Visible text of rendered HTML: tags removed, entities decoded, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


def stat(markup: str, label: str) -> str:
    """The number shown by the stat whose label ends with ``label`` (asserts there is one)."""
    m = re.search(
        re.escape(label) + r'</p><p class="descent-stat__value"><span class="descent-stat__number">([^<]*)<',
        markup,
    )
    assert m, label
    return html.unescape(m.group(1))
