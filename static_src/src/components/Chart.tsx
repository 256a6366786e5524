// A time-series chart on uPlot (canvas: labels are drawn as pixels, never as HTML).
// Deploy marks are vertical lines with their labels on every chart.

import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { Mark as ApiMark } from "../api";
import { useZone, type Zone } from "../format";

export interface Mark {
  t: number; // epoch seconds
  label: string;
}

export interface SeriesSpec {
  label: string;
  color: string; // a CSS custom property name, e.g. "--w-processed"
  fill?: boolean;
}

interface Props {
  x: number[]; // epoch seconds
  series: { spec: SeriesSpec; values: (number | null)[] }[];
  marks?: Mark[];
  height?: number;
  label: string; // accessible name of the figure
  bars?: boolean;
  dayTicks?: boolean;
}

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

function marksPlugin(marks: () => Mark[]): uPlot.Plugin {
  return {
    hooks: {
      draw: (u) => {
        const ctx = u.ctx;
        const { top, height } = u.bbox;
        ctx.save();
        ctx.strokeStyle = cssVar("--w-mark", "#b36b00");
        ctx.fillStyle = ctx.strokeStyle;
        ctx.lineWidth = Math.max(1, devicePixelRatio);
        ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
        ctx.font = `${11 * devicePixelRatio}px sans-serif`;
        ctx.textBaseline = "top";
        for (const mark of marks()) {
          const x = Math.round(u.valToPos(mark.t, "x", true));
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          ctx.beginPath();
          ctx.moveTo(x, top);
          ctx.lineTo(x, top + height);
          ctx.stroke();
          ctx.fillText(mark.label.slice(0, 40), x + 3 * devicePixelRatio, top + 2 * devicePixelRatio);
        }
        ctx.restore();
      },
    },
  };
}

// Whole seconds and minutes only: a poll chart spans a few minutes, a metrics chart hours.
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

function clock(t: number, step: number, zone: Zone): string {
  const d = new Date(t * 1000);
  const [h, m, s] = zone === "utc" ? [d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()] : [d.getHours(), d.getMinutes(), d.getSeconds()];
  const two = (n: number) => String(n).padStart(2, "0");
  return step < 60 ? `${two(h)}:${two(m)}:${two(s)}` : `${two(h)}:${two(m)}`;
}

function options(props: Props, width: number, marks: () => Mark[], zone: Zone): uPlot.Options {
  const axisColor = cssVar("--w-fg-quiet", "#666");
  const grid = { stroke: cssVar("--w-hairline", "#e8e8e8"), width: 1 };
  const axis = { stroke: axisColor, grid, ticks: grid };
  return {
    width,
    height: props.height ?? 220,
    // Axis labels follow the page's time-zone choice (UTC by default); days are UTC days.
    tzDate: zone === "utc" || props.dayTicks ? (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC") : undefined,
    plugins: [marksPlugin(marks)],
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    scales: { x: { time: true } },
    axes: [
      props.dayTicks
        ? { ...axis, values: "{YYYY}-{MM}-{DD}", space: 90 }
        : { ...axis, space: 70, incrs: TIME_STEPS, values: (_u: uPlot, splits: number[], _i: number, _s: number, step: number) => splits.map((t) => clock(t, step, zone)) },
      { ...axis, size: 60 },
    ],
    series: [
      { label: props.dayTicks ? "Day" : "Time", value: props.dayTicks ? "{YYYY}-{MM}-{DD}" : "{HH}:{mm}:{ss}" },
      ...props.series.map(({ spec }) => {
        const color = cssVar(spec.color, "#447e9b");
        return {
          label: spec.label,
          stroke: color,
          width: 2,
          fill: spec.fill ? color + "22" : undefined,
          paths: props.bars ? uPlot.paths.bars!({ size: [0.6, 40] }) : undefined,
          points: { show: !props.bars && props.x.length < 60 },
        };
      }),
    ],
  };
}

export function Chart(props: Props) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const marks = useRef<Mark[]>(props.marks || []);
  marks.current = props.marks || [];
  const data = [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData;
  const zone = useZone();
  const shape = props.series.map((s) => s.spec.label).join("|") + (props.bars ? "|bars" : "") + zone;

  useEffect(() => {
    const el = box.current!;
    const u = new uPlot(options(props, el.clientWidth || 600, () => marks.current, zone), data, el);
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: el.clientWidth, height: props.height ?? 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  return <div class="w-chart" ref={box} role="img" aria-label={props.label} />;
}

/** Deploy marks as the API sends them, for a chart (epoch seconds), oldest first. */
export function chartMarks(marks: ApiMark[]): Mark[] {
  return marks.map((m) => ({ t: m.at_ms / 1000, label: m.label })).sort((a, b) => a.t - b.t);
}
