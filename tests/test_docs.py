"""The README stays short, and every relative link in it and in docs/ leads somewhere."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.DOTALL)


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _anchors(document: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.*)$", FENCE.sub("", document.read_text()), flags=re.MULTILINE)
    anchors = set()
    for heading in headings:
        text = re.sub(r"[`*_]", "", heading).strip().lower()
        anchors.add("".join(c for c in text if c.isalnum() or c in " -").replace(" ", "-"))
    return anchors


def test_the_readme_is_at_most_300_lines():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def test_every_relative_link_resolves():
    broken = []
    for document in _documents():
        for target in LINK.findall(FENCE.sub("", document.read_text())):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            destination = (document.parent / path) if path else document
            if not destination.exists():
                broken.append(f"{document.relative_to(ROOT)}: {target}")
            elif anchor and destination.suffix == ".md" and anchor not in _anchors(destination):
                broken.append(f"{document.relative_to(ROOT)}: {target} (no such heading)")

    assert broken == []


def test_every_decision_is_in_the_index():
    decisions = ROOT / "docs" / "decisions"
    index = (decisions / "README.md").read_text()

    missing = [d.name for d in sorted(decisions.glob("[0-9][0-9][0-9][0-9]-*.md")) if f"]({d.name})" not in index]

    assert missing == []


# Reais as Brazilians write them, the way the dashboard and the payer's pages print them: R$ 1.234,56.
AMOUNT = re.compile(r"R\$ ?[0-9][0-9.,]*[0-9]")
BRAZILIAN_AMOUNT = re.compile(r"R\$ [0-9]{1,3}(\.[0-9]{3})*(,[0-9]{2})?")


def test_every_amount_in_reais_is_written_the_brazilian_way():
    """Issue 37, item 19: "R$ 100,000.00" in one place, "R$ 50.000,00" in another."""
    sources = [*_documents(), *sorted((ROOT / "payments" / "reference").glob("*.py"))]

    odd = [f"{path.relative_to(ROOT)}: {amount}" for path in sources for amount in AMOUNT.findall(path.read_text())
           if not BRAZILIAN_AMOUNT.fullmatch(amount)]

    assert odd == []
