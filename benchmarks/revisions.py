"""`--vs`: check git revisions of Wurk out into temporary worktrees to run side by side."""

import shutil
import subprocess
import tempfile
from pathlib import Path

from .targets import BenchError, Target, wurk_target


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


class Worktrees:
    """Each revision in its own `git worktree add --detach`; removed again on close."""

    def __init__(self, repo: Path):
        self.repo = Path(git(repo, "rev-parse", "--show-toplevel"))
        self.parent = Path(tempfile.mkdtemp(prefix="wurk-bench-vs-"))
        self.paths: list[Path] = []

    def target(self, revision: str) -> Target:
        """A target for `revision`; "." is the working tree as it is, uncommitted changes too."""
        if revision == ".":
            return wurk_target("wurk@working-tree", root=str(self.repo))
        sha = git(self.repo, "rev-parse", "--short", f"{revision}^{{commit}}")
        path = self.parent / sha
        if path not in self.paths:
            git(self.repo, "worktree", "add", "--detach", "--quiet", str(path), sha)
            self.paths.append(path)
        return wurk_target(f"wurk@{sha}", root=str(path))

    def close(self) -> None:
        for path in self.paths:
            try:
                git(self.repo, "worktree", "remove", "--force", str(path))
            except BenchError:
                pass  # already gone; prune below tidies git's records
        git(self.repo, "worktree", "prune")
        shutil.rmtree(self.parent, ignore_errors=True)
