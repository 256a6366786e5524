"""Results: samples by row and target, medians and paired ratios, the table, the JSON,
and the console progress bar."""

import statistics
import sys
import time

from .measure import Sample

DECIMALS = {"jobs/s": 0, "calls/s": 0, "ms": 2, "s": 3, "MiB": 1, "%": 1, "per job": 2,
            "per call": 2, "per push": 2, "x": 2}
BAR_WIDTH = 24
REDRAW_S = 0.1


class Row:
    """One metric: every target's samples, indexed by repeat so runs can be paired."""

    def __init__(self, sample: Sample):
        self.key = sample.key
        self.unit = sample.unit
        self.higher_is_better = sample.higher_is_better
        self.samples: dict[str, dict[int, float]] = {}
        self.details: dict[str, list[dict]] = {}

    def add(self, label: str, repeat: int, sample: Sample) -> None:
        self.samples.setdefault(label, {})[repeat] = sample.value
        if sample.details:
            self.details.setdefault(label, []).append(sample.details)

    def summary(self, label: str) -> dict | None:
        values = list(self.samples.get(label, {}).values())
        if not values:
            return None
        return {"median": statistics.median(values), "min": min(values), "max": max(values),
                "runs": values}

    def ratio(self, label: str, baseline: str) -> float | None:
        """The median of `label / baseline` over runs made in the same repeat."""
        mine, base = self.samples.get(label, {}), self.samples.get(baseline, {})
        pairs = [mine[r] / base[r] for r in mine if r in base and base[r]]
        return statistics.median(pairs) if pairs else None


class Results:
    def __init__(self, labels: list[str], meta: dict):
        self.labels = labels
        self.meta = meta
        self.rows: dict[str, Row] = {}
        self.errors: list[str] = []

    def add(self, label: str, repeat: int, sample: Sample) -> None:
        row = self.rows.get(sample.key)
        if row is None:
            row = self.rows[sample.key] = Row(sample)
        row.add(label, repeat, sample)

    def error(self, message: str) -> None:
        self.errors.append(message)

    def to_json(self) -> dict:
        rows = []
        for row in self.rows.values():
            rows.append({
                "metric": row.key, "unit": row.unit, "higher_is_better": row.higher_is_better,
                "targets": {label: row.summary(label) for label in self.labels
                            if row.summary(label)},
                "ratios": {label: row.ratio(label, self.labels[0]) for label in self.labels[1:]
                           if row.ratio(label, self.labels[0]) is not None},
                "details": row.details})
        return {"meta": self.meta, "baseline": self.labels[0], "rows": rows,
                "errors": self.errors}

    def cells(self) -> tuple[list[str], list[list[str]]]:
        base = self.labels[0]
        header = ["metric", "unit", *self.labels,
                  *(f"{label} / {base}" for label in self.labels[1:])]
        body = []
        for row in self.rows.values():
            line = [row.key, row.unit]
            for label in self.labels:
                summary = row.summary(label)
                line.append(spread(summary, row.unit) if summary else "-")
            for label in self.labels[1:]:
                ratio = row.ratio(label, base)
                line.append("-" if ratio is None else f"{ratio:.2f}x")
            body.append(line)
        return header, body

    def table(self, markdown: bool = False) -> str:
        header, body = self.cells()
        if markdown:
            lines = [header, ["---", "---", *["---:"] * (len(header) - 2)], *body]
            return "\n".join("| " + " | ".join(line) + " |" for line in lines)
        widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
        out = []
        for index, line in enumerate([header, *body]):
            out.append("  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                                 for i, cell in enumerate(line)))
            if index == 0:
                out.append("  ".join("-" * width for width in widths))
        return "\n".join(out)


def number(value: float, unit: str) -> str:
    return f"{value:,.{DECIMALS.get(unit, 2)}f}"


def spread(summary: dict, unit: str) -> str:
    """`median (min-max)`, or the median alone for a single run."""
    text = number(summary["median"], unit)
    if len(summary["runs"]) > 1:
        text += f" ({number(summary['min'], unit)}-{number(summary['max'], unit)})"
    return text


class Progress:
    """One line on the console: overall runs and the current run's jobs.

    On a terminal it redraws in place with \\r; elsewhere (CI, a pipe) it prints one
    line per run, so logs stay readable.
    """

    def __init__(self, total: int, stream=None, enabled: bool = True):
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and self.stream.isatty()
        self.done = 0
        self.label = ""
        self._drawn_at = 0.0
        self._width = 0

    def step(self, label: str) -> None:
        if self.label and self.enabled:
            self.done += 1
        self.label = label
        if self.tty:
            self._draw("")
        elif self.enabled:
            print(f"[{self.done + 1}/{self.total}] {label}", file=self.stream, flush=True)

    def jobs(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self.tty and now - self._drawn_at >= REDRAW_S:
            self._draw(f"{done:,}/{total:,} jobs")

    def _draw(self, extra: str) -> None:
        self._drawn_at = time.monotonic()
        filled = BAR_WIDTH * self.done // max(self.total, 1)
        text = (f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done + 1}/{self.total} "
                f"{self.label} {extra}")
        self.stream.write(text.ljust(self._width))
        self._width = len(text)
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
