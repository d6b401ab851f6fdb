"""The site's chrome (issue 13): the glossary behind every abbreviation's tooltip, the repository
link, and the "last update" date that comes from git where there is git and from
SOURCE_DATE_EPOCH otherwise (so a build from a copy of the files stays byte-reproducible)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from mkdocs.exceptions import PluginError

from descent.site import glossary, hooks

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "docs" / glossary.GLOSSARY_FILE


class _Plugin:
    def __init__(self, **config):
        self.config = {"type": "date", "locale": "en", "timezone": "UTC", **config}


def test_the_glossary_is_one_file_with_each_term_once():
    entries = glossary.entries(GLOSSARY)
    terms = [t for t, _ in entries]
    for needed in ("TTFT", "ITL", "GQA", "MLA", "KV", "MoE", "HBM"):  # the list
        assert needed in terms
    assert terms == sorted(terms, key=str.casefold), "keep the glossary in alphabetical order"
    for term, text in entries:
        assert '"' not in text and "<" not in text, f"{term}: plain text only (it becomes an HTML title)"


def test_glossary_rejects_malformed_and_duplicate_lines(tmp_path):
    bad = tmp_path / "a.md"
    bad.write_text("*[KV] key and value\n")
    with pytest.raises(ValueError, match="a glossary entry is"):
        glossary.entries(bad)
    bad.write_text("*[KV]: key\n*[KV]: value\n")
    with pytest.raises(ValueError, match="'KV' is defined twice"):
        glossary.entries(bad)


def test_mkdocs_appends_the_glossary_to_every_page_and_links_the_repository():
    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_constructor("!ENV", lambda loader, node: None)
    cfg = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)
    snippets = next(e["pymdownx.snippets"] for e in cfg["markdown_extensions"] if isinstance(e, dict) and "pymdownx.snippets" in e)
    assert snippets["auto_append"] == [GLOSSARY.name] and "abbr" in cfg["markdown_extensions"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", cfg["repo_url"])
    assert cfg["edit_uri"] == "edit/main/docs/" and "content.action.edit" in cfg["theme"]["features"]
    assert any(isinstance(p, dict) and "git-revision-date-localized" in p for p in cfg["plugins"])
    assert {"Glossary": "glossary.md"} in cfg["nav"]
    # The address is written once: the README and the workflow do not repeat it.
    for other in ("README.md", ".github/workflows/pages.yml"):
        path = ROOT / other
        if path.exists():
            assert cfg["repo_url"] not in path.read_text(), f"{other} repeats repo_url"


def test_dates_come_from_source_date_epoch_without_git():
    # 1700000000 s after 1970-01-01 UTC is 2023-11-14 22:13:20 UTC.
    hooks._state.root = ROOT
    date = hooks.fallback_date(_Plugin(), {"SOURCE_DATE_EPOCH": "1700000000"})
    assert ">November 14, 2023</span>" in date and "git-revision-date-localized-plugin-date" in date
    assert 'title="November 14, 2023 22:13:20 UTC"' in date
    assert hooks.fallback_date(_Plugin(), {}) == ""  # no date rather than the clock's
    with pytest.raises(PluginError, match="SOURCE_DATE_EPOCH must be a whole number"):
        hooks.fallback_date(_Plugin(), {"SOURCE_DATE_EPOCH": "yesterday"})


def test_git_is_asked_only_where_there_is_git(tmp_path):
    assert hooks.page_dates_from_git(tmp_path) is False  # a copy of the files, no .git
    inside = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=ROOT, capture_output=True).returncode == 0
    assert hooks.page_dates_from_git(ROOT) is inside


def test_built_pages_have_an_edit_link_a_date_and_tooltips(site_dir):
    page = (site_dir / "part-5-the-whole-descent.html")
    if not page.exists():
        page = site_dir / "part-5-the-whole-descent" / "index.html"
    html = page.read_text(encoding="utf-8")
    assert re.search(r'href="https://github\.com/[^"]+/edit/main/docs/part-5-the-whole-descent\.md"', html)
    assert re.search(r'git-revision-date-localized-plugin-date" title="[^"]+">\w+ \d{1,2}, \d{4}</span>', html)
    assert re.search(r'<abbr title="key and value: [^"]+">KV</abbr>', html)
    assert "data-md-component=\"source\"" not in html  # no star count fetched from the GitHub API
    gl = (site_dir / "glossary.html") if (site_dir / "glossary.html").exists() else site_dir / "glossary" / "index.html"
    text = gl.read_text(encoding="utf-8")
    for term, _ in glossary.entries(GLOSSARY):
        assert re.search(rf"<strong>(<abbr [^>]*>)?{re.escape(term)}(</abbr>)?</strong>", text), term


_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1", re.S | re.M)
_LINK = re.compile(r"\[[^\]]*\]\((?:https?://|\.\./|\./|[\w-]+\.md)[^)]*\)")
_CITATION = re.compile(r"\b[A-Z][\w-]+(?: et al\.| and [A-Z][\w-]+| & [A-Z][\w-]+) (?:19|20)\d\d\b")


#: Markdown under docs/ that the site does not build (mkdocs.yml exclude_docs): the decision records.
NOT_PAGES = ROOT / "docs" / "decisions"


PAGES_MD = sorted(p for p in (ROOT / "docs").rglob("*.md") if NOT_PAGES not in p.parents)


@pytest.mark.parametrize("page", PAGES_MD, ids=lambda p: p.name)
def test_every_citation_is_a_link(page):
    # Issue 13: "Xiao et al. 2023" in prose is a link (arXiv, DOI or the project's page).
    text = _LINK.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    text = re.sub(r"`[^`]*`", "", text)
    bare = _CITATION.findall(text) and [m.group(0) for m in _CITATION.finditer(text)]
    assert not bare, f"{page.relative_to(ROOT)}: citations without a link: {bare}"


def test_pages_workflow_builds_prs_and_publishes_main():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as True
    assert on["push"]["branches"] == ["main"] and "pull_request" in on
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    runs = "\n".join(s.get("run", "") for s in build["steps"])
    assert "nox -s build" in runs  # mkdocs build --strict (noxfile), the same build as a contributor's
    checkout = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # page dates from git history
    assert deploy["needs"] == "build" and deploy["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in deploy["steps"])
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["if"] == "github.event_name != 'pull_request'"


def test_readme_says_which_parts_are_written():
    # The README's table of parts agrees with the pages: a page that still carries the
    # "This part is being written" box is not listed as written.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    boxes = []
    for page in sorted((ROOT / "docs").glob("part-*.md")):
        n = page.name.split("-")[1]
        row = re.search(rf"^\| {n} · [^|]+\| ([^|]+)\|", readme, re.M)
        assert row, f"README lists no row for part {n}"
        state = row.group(1).strip()
        box = '"This part is being written"' in page.read_text(encoding="utf-8")
        boxes.append(box)
        assert (state == "written") == (not box), f"part {n}: README says {state!r}, the page {'has' if box else 'has no'} the outline box"
    assert "torch" in readme and re.search(r"tests take about \d+", readme)
    # The home page's "Where the site stands" note says the same: it may call parts outlines
    # only while some page still has the box.
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    note = home[home.index('"Where the site stands"'):].split("\n\n")[0]
    assert ("outline" in note) == any(boxes), f"the home page's note disagrees with the pages: {note!r}"
