"""How many worker processes to fork and the memory cap per process: `"auto"` (one per CPU
this process may use: its affinity mask and its cgroup's CPU quota), fractions, and the
environment variables Sidekiq's swarm reads (WURK_COUNT / SIDEKIQ_COUNT, WURK_MAXMEM_MB /
SIDEKIQ_MAXMEM_MB)."""

import math
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigurationError

AUTO = "auto"
# Read in this order; the first one set wins (after the flag and the setting).
COUNT_VARIABLES = ("WURK_COUNT", "SIDEKIQ_COUNT")
MAXMEM_VARIABLES = ("WURK_MAXMEM_MB", "SIDEKIQ_MAXMEM_MB")


@dataclass(frozen=True)
class CpuBudget:
    """The CPUs this process may use, and what limited them, for the start-up banner."""

    cpus: float
    reason: str

    @property
    def processes(self) -> int:
        return max(1, round_half_up(self.cpus))


def round_half_up(value: float) -> int:
    # Sidekiq's swarm rounds a fractional count the Ruby way, 2.5 -> 3; Python's round()
    # would make it 2.
    return math.floor(value + 0.5)


def cpu_budget(proc: Path = Path("/proc/self")) -> CpuBudget:
    """The CPUs the scheduler lets this process run on, lowered by a cgroup CPU quota
    (a container's `--cpus`, a Kubernetes CPU limit): v2 `cpu.max` or v1 CFS quota."""
    try:
        allowed = len(os.sched_getaffinity(0))
        reason = f"{allowed} CPUs in its affinity mask"
    except (AttributeError, OSError):  # not Linux
        allowed = os.cpu_count() or 1
        reason = f"{allowed} CPUs"
    quota = cgroup_quota(proc)
    if quota is not None and quota < allowed:
        return CpuBudget(quota, f"a cgroup CPU quota of {quota:g} CPUs ({reason})")
    return CpuBudget(float(allowed), reason)


def cgroup_quota(proc: Path = Path("/proc/self")) -> float | None:
    """The tightest CPU quota on this process's cgroups or their parents, in CPUs; None
    if there is none (or no cgroup file system). Mount points come from mountinfo, so a
    container's, a hybrid v1 + v2 host's or a plain v2 host's layout all read right."""
    try:
        memberships = (proc / "cgroup").read_text().splitlines()
        mounts = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    quotas = []
    for line in memberships:
        _, controllers, path = line.split(":", 2)
        v2 = controllers == ""  # the unified hierarchy
        if not v2 and "cpu" not in controllers.split(","):
            continue
        for root, point in _cgroup_mounts(mounts, v2):
            if path == root or path.startswith(root.rstrip("/") + "/"):
                relative = path[len(root.rstrip("/")):]
                read = _v2_quota if v2 else _v1_quota
                quotas += [q for folder in _ancestors(Path(point), relative)
                           if (q := read(folder)) is not None]
    return min(quotas) if quotas else None


def _cgroup_mounts(lines: list[str], v2: bool):
    """(root inside the hierarchy, mount point) of each cgroup mount holding the CPU
    controller (v1) or of the unified hierarchy (v2)."""
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, described = left.split(), right.split()
        if len(fields) < 5 or len(described) < 3:
            continue
        if (v2 and described[0] == "cgroup2") or (
                not v2 and described[0] == "cgroup" and "cpu" in described[2].split(",")):
            yield fields[3], fields[4]


def _ancestors(mount: Path, relative: str) -> list[Path]:
    """The cgroup's folder and each parent up to the mount: a limit may sit on any."""
    parts = [part for part in relative.split("/") if part]
    return [mount.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]


def _v2_quota(folder: Path) -> float | None:
    try:
        limit, period = (folder / "cpu.max").read_text().split()
        return None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError, ZeroDivisionError):
        return None


def _v1_quota(folder: Path) -> float | None:
    try:
        limit = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return limit / period if limit > 0 and period > 0 else None


def process_count(value, name: str = "processes") -> tuple[int, str]:
    """A count of processes and how it was reached (for the log): a whole number >= 1,
    "auto" (one per usable CPU), or a fraction rounded half up, 2.5 -> 3, as Sidekiq's
    swarm rounds SIDEKIQ_COUNT."""
    if isinstance(value, str) and value.strip().lower() == AUTO:
        budget = cpu_budget()
        return budget.processes, f"{name} 'auto': {budget.reason}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise ConfigurationError(f"{name} must be a whole number >= 1, 'auto' (one per CPU) "
                                 f"or a fraction rounded to the nearest count, got {value!r}",
                                 field="processes")
    count = round_half_up(value) if isinstance(value, float) else value
    if count < 1:
        raise ConfigurationError(f"{name} must be a whole number >= 1, got {value!r}",
                                 field="processes")
    return count, (f"{name} {value!r} rounded to {count}" if count != value else "")


def count_from_text(text: str, name: str):
    """A flag's or a variable's text as `process_count` takes it: "auto", int or float."""
    cleaned = text.strip().lower()
    if cleaned == AUTO:
        return AUTO
    try:
        return int(cleaned)
    except ValueError:
        pass
    try:
        return float(cleaned)
    except ValueError:
        raise ConfigurationError(f"{name} must be a whole number >= 1, 'auto' (one per CPU) "
                                 f"or a fraction, got {text!r}", field="processes") from None


def memory_cap_mb(value, name: str = "max_memory_mb") -> float | None:
    """Megabytes from the environment: 0 turns the cap off, anything else must be a
    positive number (a typo would otherwise leave a cap silently off)."""
    try:
        megabytes = float(value)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number of megabytes (0 for no cap), got "
                                 f"{value!r}", field="max_memory_mb") from None
    if not math.isfinite(megabytes) or megabytes < 0:
        raise ConfigurationError(f"{name} must be a number of megabytes >= 0 (0 for no cap), "
                                 f"got {value!r}", field="max_memory_mb")
    return megabytes or None


def from_environment(environ=None) -> dict:
    """`{"processes": (value, variable), "max_memory_mb": (value, variable)}` for the
    variables that are set, each taken from the first of its names that is."""
    environ = os.environ if environ is None else environ
    found = {}
    for field, names in (("processes", COUNT_VARIABLES), ("max_memory_mb", MAXMEM_VARIABLES)):
        for name in names:
            if environ.get(name, "").strip():
                found[field] = (environ[name], name)
                break
    return found


def with_environment(values: dict, labels: dict, environ=None) -> None:
    """Fill `processes` and `max_memory_mb` from the environment where no flag or setting
    gave them (parsed from text), labelled `$VARIABLE` for error messages; text from a
    flag (`labels[...]` starting with "--") is parsed too."""
    if isinstance(values.get("processes"), str) and labels["processes"].startswith("--"):
        values["processes"] = count_from_text(values["processes"], "processes")
    for field, (text, variable) in from_environment(environ).items():
        if field not in values:
            labels[field] = f"${variable}"
            values[field] = (count_from_text(text, field) if field == "processes"
                             else memory_cap_mb(text, field))
