"""The docs a user reads stay short and hold only pages and the figures they show: the dated
experiment record lives in log/, run files and raw measurements in results/."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_readme_and_performance_page_stay_short():
    assert len((REPO / "README.md").read_text().splitlines()) <= 130
    assert len((REPO / "docs" / "performance.md").read_text().splitlines()) <= 300


def test_docs_hold_pages_and_the_figures_a_page_shows():
    docs = REPO / "docs"
    pages = [p for p in docs.rglob("*.md")] + [REPO / "README.md"]
    text = "\n".join(p.read_text() for p in pages)
    stray = [str(p.relative_to(REPO)) for p in docs.rglob("*") if p.is_file() and p.suffix != ".md"
             and p.name not in text]
    assert not stray, f"files under docs/ that no page shows: {stray}"
