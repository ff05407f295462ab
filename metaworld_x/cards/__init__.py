"""Model cards for the shipped experts and routers, written from each artifact's own metadata.

`experts/README.md` and `router/README.md` are generated: one card per folder that holds a `metrics.json`,
in the Hugging Face model-card order (what it does, its data and licence, how to reproduce it, its evaluation
with the machine, its known limits). Everything on a card is read from the folder (`spec.json`,
`metrics.json`, `policy.json`, `router.json`), from the clips' metadata (source, licence, attribution) and
from the hand-written `limits.py`, so a card cannot drift from its artifact: `stale()` compares the files
with what would be written now, and the tests fail on a difference. A new folder (another router, say one
over all tasks) gets its card with no change here: missing fields are left out, never guessed.

`experts.py` and `routers.py` write the two READMEs, `cells.py` the figures they share.

No heavy imports: numpy only, to read a clip's metadata.
"""

from __future__ import annotations

from pathlib import Path

from metaworld_x.atomic import write_text
from metaworld_x.cards.experts import experts_readme
from metaworld_x.cards.routers import routers_readme


def render(project_dir: Path) -> dict[Path, str]:
    """{README path: its text} for experts/ and router/ under `project_dir`, as they would be written now."""
    project_dir = Path(project_dir)
    return {
        project_dir / "experts" / "README.md": experts_readme(project_dir / "experts", project_dir / "assets" / "motions"),
        project_dir / "router" / "README.md": routers_readme(project_dir / "router"),
    }


def stale(project_dir: Path) -> list[Path]:
    """The cards whose file differs from what `render` gives (or is missing); reads only."""
    return [path for path, text in render(project_dir).items() if not path.is_file() or path.read_text() != text]


def write(project_dir: Path) -> list[Path]:
    """Write every stale card atomically; returns those written."""
    written = []
    for path, text in render(project_dir).items():
        if not path.is_file() or path.read_text() != text:
            write_text(path, text)
            written.append(path)
    return written
