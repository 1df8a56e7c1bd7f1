"""The documentation holds together: every relative link in README.md and docs/*.md points at
a file of the repository and, with a `#fragment`, at a heading of that file (GitHub's anchor
rules); user-facing pages cite public sources, not files a user does not have."""
import re
from urllib.parse import unquote

import pytest

from tests.helpers import ROOT

PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^()\s]+)\)")


def _prose(text):
    """text without fenced code blocks: list of lines (links and headings in code don't count)."""
    out, fence = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            out.append(line)
    return out


def slug(heading):
    """GitHub's anchor for a heading text: lower case, punctuation dropped, spaces -> '-'."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def anchors(path):
    """Set of the `#fragment`s GitHub gives the headings of the markdown file `path`
    (a repeated heading gets -1, -2, ...)."""
    seen, out = {}, set()
    for line in _prose(path.read_text()):
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path):
    """List of the link targets in the prose of markdown file `path`."""
    return [m.group(1) for line in _prose(path.read_text()) for m in LINK.finditer(line)]


def test_slug_follows_github():
    assert slug("The nodes' current config (`spec.output.baseline`)") == \
        "the-nodes-current-config-specoutputbaseline"
    assert slug("OpenShift (`openshift`)") == "openshift-openshift"
    assert slug("Argo CD, way (a): Argo CD's own kustomize runs krm-fn") == \
        "argo-cd-way-a-argo-cds-own-kustomize-runs-krm-fn"


def test_pages_were_found():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/configuration.md", "docs/platforms.md"} <= names
    assert all(links(p) for p in PAGES), "a page without any link"


def broken_links(page, root=ROOT):
    """List of 'target: reason' for the relative links of markdown file `page` that point at
    no file under `root`, or at a heading the target file does not have."""
    bad = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):          # https:, mailto:, ...
            continue
        file_part, _, fragment = target.partition("#")
        dest = (page.parent / unquote(file_part)).resolve() if file_part else page.resolve()
        if not dest.exists() or root.resolve() not in [dest, *dest.parents]:
            bad.append(f"{target}: no such file")
        elif fragment and (dest.is_dir() or dest.suffix != ".md"
                           or fragment not in anchors(dest)):
            bad.append(f"{target}: no heading #{fragment}")
    return bad


def test_broken_links_are_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Two words\n")
    page = tmp_path / "README.md"
    page.write_text("[ok](docs/a.md#two-words) [self](#top) [gone](docs/b.md) "
                    "[bad](docs/a.md#three) [web](https://kubernetes.io/x)\n"
                    "```\n[in code](nowhere.md)\n```\n# Top\n")
    assert broken_links(page, tmp_path) == ["docs/b.md: no such file",
                                            "docs/a.md#three: no heading #three"]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_relative_links_resolve(page):
    bad = broken_links(page)
    assert not bad, f"{page.relative_to(ROOT)}: " + "; ".join(bad)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_pages_cite_public_sources(page):
    text = page.read_text()
    for private in ["DESIGN.md", "kubelet.md", "cases.md", "shared/reference"]:
        assert private not in text, f"{page.relative_to(ROOT)} cites {private}"


def test_verify_examples_use_the_topology_policy_krm_fn_emits_by_default():
    from krm_fn import config
    default = config.load(None).nodePools[0].kubelet.topologyManagerPolicy
    text = (ROOT / "docs" / "verify.md").read_text()
    # the in-pod examples (`verify --node` shows the NUMA-span audit, which needs
    # single-numa-node)
    pod_lines = [line for line in text.splitlines()
                 if "krm-fn verify" in line and "--node" not in line]
    found = re.findall(r"--topology-policy ([a-z-]+) ", "\n".join(pod_lines))
    assert default == "best-effort"
    assert found == [default, default]


def test_the_workloads_page_lists_the_rules_in_the_order_they_run():
    """Newcomer trial: docs/workloads.md named rules (`sidecars`, `injected`) that no longer
    exist, in another order than `krm-fn explain rule`. Its list names each rule in bold, in
    the order of krm_fn.rules.RULES, after `merged` (which runs first)."""
    import re
    from krm_fn import rules
    page = (ROOT / "docs" / "workloads.md").read_text()
    start = page.index("these rules, in order")
    part = page[start:page.index("\n### ", start)]
    named = re.findall(r"\*\*([a-z-]+)\*\*", part)
    want = ["merged"] + [rules.rule_id(r) for r in rules.RULES]
    assert [n for n in named if n in want] == want, named
    words = ("error", "warning", "info")        # severities, also in bold
    assert not [n for n in named if n not in want and n not in words], named
