// belier's console page: reads the run from /api/run, follows /api/stream, steers through
// /api/run/*, and draws its charts in plain SVG. Nothing is loaded from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
let run = null;        // the run shown, as /api/run gives it
let intervals = [];    // its intervals so far

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

const fixed = (v, d = 1) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));

function show(r) {
  run = r;
  const state = r ? r.state : "no run";
  $("state").textContent = state;
  $("state").className = "state " + state;
  if (!r) return;
  const s = r.settings || {};
  $("run-title").textContent = `#${r.id} ${s.plan || s.url || ""}`;
  const steer = r.steering;
  const rate = steer.unit === "rate" || steer.unit === "iterations";
  $("level-unit").textContent = rate ? `target ${steer.unit}/s` : steer.unit;
  if (document.activeElement !== $("level")) $("level").value = fixed(steer.level, rate ? 1 : 0);
  $("pause").textContent = steer.paused ? "Resume" : "Pause";
  const live = r.state !== "ended";
  for (const id of ["down", "set", "up", "pause", "stop", "level"]) $(id).disabled = !live;
  $("links").hidden = live;
  if (!live) {
    $("report-link").href = r.report;
    $("results-link").hidden = !r.results;
    if (r.results) $("results-link").href = r.results;
  }
  if (r.totals) tables(r.totals);
  figures();
}

function figures() {
  const last = intervals[intervals.length - 1];
  $("interval-count").textContent = intervals.length;
  if (last) {
    $("rate-now").textContent = fixed(last.rate);

    $("p50-now").textContent = fixed(last.p50_ms, 2);
    $("p99-now").textContent = fixed(last.p99_ms, 2);
  }
  if (run) {
    // The level set (the chart's target line is the arrivals that came due).
    $("target-now").textContent = run.steering.paused ? "paused" : fixed(run.steering.level);
  }
  if (run && run.totals) {
    const t = run.totals;
    $("requests-now").textContent = t.requests;
    $("errors-now").textContent = t.errors;
    // The text report's words: success is a status below 400; a 4xx/5xx came back whole (no
    // error) but failed, so a run of 400s shows 0 errors beside 100 % failed.
    const share = (n) => (t.requests ? (100 * n) / t.requests : 0);
    $("success-now").textContent = t.requests ? `${fixed(share(t.succeeded), 2)} %` : "–";
    $("failed-now").textContent = t.failed_responses;
    $("failed-share").textContent = t.requests
      ? `failed (4xx/5xx) · ${fixed(share(t.failed_responses), 1)} %` : "failed (4xx/5xx)";
    $("failed-now").className = t.failed_responses ? "bad" : "";
  }
  const t = intervals.map((i) => i.t_s);
  const line = (key) => intervals.map((i, n) => [t[n], i[key]]).filter((p) => p[1] !== null);
  const rate = run && (run.steering.unit === "rate" || run.steering.unit === "iterations");
  // Changes made while the run ran, drawn as markers on both charts.
  const marks = run ? run.steering.history.map((c) => [c.at_s, c.level === 0 ? "pause" : fixed(c.level, 0)]) : [];
  chart($("chart-rate"), marks, [
    { name: "achieved", color: "#1f5fbf", points: line("rate") },
    { name: rate ? "target" : run ? run.steering.unit : "level", color: "#c0392b", points: line(rate ? "target" : "level"), dashed: true },
  ]);
  chart($("chart-latency"), marks, [
    { name: "p50", color: "#1f7a3a", points: line("p50_ms") },
    { name: "p90", color: "#a86b00", points: line("p90_ms") },
    { name: "p99", color: "#b00020", points: line("p99_ms") },
  ]);
}

// A line chart of `series` ({name, color, points: [[x, y]]}) in `svg` (600×220 units), with
// a vertical marker at each of `marks` ([x, label]).
function chart(svg, marks, series) {
  const W = 600, H = 220, L = 48, R = 10, T = 22, B = 24;
  svg.replaceChildren();
  const all = series.flatMap((s) => s.points);
  const xMax = Math.max(1, ...all.map((p) => p[0]));
  const yMax = nice(Math.max(1e-9, ...all.map((p) => p[1])));
  const x = (v) => L + (v / xMax) * (W - L - R);
  const y = (v) => H - B - (v / yMax) * (H - T - B);
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  };
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    add("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#e3e7ec" });
    add("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end" }, +v.toPrecision(3));
  }
  add("text", { x: W - R, y: H - 6, "text-anchor": "end" }, `${fixed(xMax, 0)} s`);
  add("text", { x: L, y: H - 6 }, "0 s");
  for (const [at, label] of marks) {
    if (at > xMax) continue;
    add("line", { x1: x(at), x2: x(at), y1: T, y2: H - B, stroke: "#7a4fb5", "stroke-dasharray": "2 3", class: "change" });
    add("text", { x: x(at) + 3, y: T + 10, style: "fill: #7a4fb5" }, label);
  }
  series.forEach((s, n) => {
    add("text", { x: L + 8 + n * 90, y: 14, style: `fill: ${s.color}`, "data-series": s.name }, s.name);
    if (s.points.length === 0) return;
    add("polyline", {
      points: s.points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" "),
      fill: "none", stroke: s.color, "stroke-width": 2,
      "stroke-dasharray": s.dashed ? "5 4" : "none",
    });
  });
}

function nice(v) {
  const step = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * step) return m * step;
  return 10 * step;
}

function rows(table, data, cells) {
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const d of data) {
    const tr = body.insertRow();
    for (const [value, number] of cells(d)) {
      const td = tr.insertCell();
      td.textContent = value;
      if (number) td.className = "n";
    }
  }
  table.hidden = data.length === 0;
}

const MESSAGE_CAPTIONS = {
  grpc: "gRPC messages",
  websocket: "WebSocket messages",
  events: "Streamed events",
  chunks: "Streamed chunks",
  tokens: "Streamed token chunks",
};

function tables(totals) {
  rows($("statuses"), totals.statuses, (s) => [[s.status], [s.count, true]]);
  rows($("errors"), totals.error_kinds, (e) => [[e.kind], [e.count, true]]);
  rows($("steps"), totals.steps, (s) => [[s.step], [s.requests, true], [s.failures, true],
    [`p50 ${fixed(s.p50_ms, 2)} ms`], [`p99 ${fixed(s.p99_ms, 2)} ms`]]);
  // Runs with messages only (streaming gRPC calls, WebSockets, streamed bodies): the table
  // stays hidden for any other run, and its caption says what the messages are.
  const m = totals.messages;
  if (m) $("messages").caption.textContent = MESSAGE_CAPTIONS[m.unit] || "Messages";
  const messages = m ? [["received", m.received, m.received_per_s],
    ["sent", m.sent, m.sent_per_s]] : [];
  rows($("messages"), messages, ([what, n, rate]) => [[what], [n, true],
    [`${fixed(rate)}/s`, true]]);
  // Runs that read the server's own time only (--server-timing): each metric, the server's
  // time and the time outside it; the caption counts the responses without a figure.
  const st = totals.server_timing;
  if (st) $("server-timing").caption.textContent =
    `Server timing (${st.timed} timed, ${st.missing} without the header, ${st.malformed} unreadable)`;
  rows($("server-timing"), st ? st.rows : [], (r) => [[r.name], [r.count, true],
    [`p50 ${fixed(r.p50_ms, 2)} ms`], [`p99 ${fixed(r.p99_ms, 2)} ms`]]);
  // HTTP/3 runs only: QUIC's own figures, and how many connections ended by each cause.
  const q = totals.quic;
  const quic = q ? [["handshakes", q.handshakes], ["datagrams sent", q.datagrams_sent],
    ["datagrams received", q.datagrams_received],
    ["packets lost", `${q.packets_lost} of ${q.packets_sent}`],
    ...Object.entries(q.ended).map(([cause, n]) => [`ended: ${cause}`, n])] : [];
  rows($("quic"), quic, ([what, n]) => [[what], [n, true]]);
  // The slowest responses so far, with their traces when the run traces (--trace-sample):
  // when each was due, in UTC as servers log it.
  rows($("slowest"), totals.slowest || [], (e) => [[`${fixed(e.latency_ms, 2)} ms`, true],
    [e.status], [new Date(e.due_unix_ms).toISOString().slice(11, 23) + " UTC"],
    [e.trace_id || ""], [e.step || ""]]);
}

async function refreshRuns() {
  if ($("past").hidden) return;
  const runs = await api("/api/runs");
  rows($("runs"), runs, (r) => [[r.id], [r.settings.plan || r.settings.url],
    [r.settings.started_at || ""], [r.state], [r.report ? "report" : ""]]);
  // The file cells link to the run's report and results.
  [...$("runs").tBodies[0].rows].forEach((tr, n) => {
    const r = runs[n], cell = tr.cells[4];
    cell.replaceChildren();
    for (const [href, text] of [[r.report, "report"], [r.results, "results"]]) {
      if (!href) continue;
      const a = document.createElement("a");
      a.href = href; a.textContent = text + " ";
      cell.appendChild(a);
    }
  });
}

// POSTs to a control endpoint (pause, resume and stop take an empty object).
async function steer(path, body = {}) {
  $("control-error").textContent = "";
  try {
    run.steering = await api(path, body);
    show(run);
  } catch (e) {
    $("control-error").textContent = e.message;
  }
}

function setLevel(level) {
  const rate = run.steering.unit === "rate" || run.steering.unit === "iterations";
  if (!rate) level = Math.max(1, Math.round(level));
  steer(rate ? "/api/run/rate" : "/api/run/users", rate ? { rate: level } : { users: level });
}

$("set").onclick = () => setLevel(Number($("level").value));
$("up").onclick = () => setLevel(run.steering.level * 1.1);
$("down").onclick = () => setLevel(run.steering.level / 1.1);
$("pause").onclick = () => steer(run.steering.paused ? "/api/run/resume" : "/api/run/pause");
$("stop").onclick = () => steer("/api/run/stop");

$("form").onsubmit = async (event) => {
  event.preventDefault();
  $("form-error").textContent = "";
  const form = {};
  for (const f of ["plan", "url", "method", "headers", "body", "model", "connections", "rate", "stages", "duration", "name"]) {
    const v = $("f-" + f).value.trim();
    if (v !== "") form[f] = v;
  }
  try {
    await api("/api/runs", form);
  } catch (e) {
    $("form-error").textContent = e.message;
  }
};

async function start() {
  const console = await api("/api/console");
  if (console.mode === "console") {
    $("new-run").hidden = false;
    $("past").hidden = false;
    for (const p of console.plans) $("f-plan").add(new Option(p, p));
  }
  const r = await api("/api/run");
  intervals = r ? r.intervals : [];
  show(r);
  refreshRuns();
  const events = new EventSource("/api/stream");
  events.addEventListener("begin", (e) => { intervals = []; show(JSON.parse(e.data)); refreshRuns(); });
  events.addEventListener("interval", (e) => {
    const d = JSON.parse(e.data);
    if (!run || d.run !== run.id) return;
    intervals.push(d.interval);
    run.totals = d.totals;
    run.steering = d.steering;
    run.state = d.steering.paused ? "paused" : "running";
    show(run);
  });
  events.addEventListener("steering", (e) => {
    const d = JSON.parse(e.data);
    if (run && d.run === run.id && run.state !== "ended") { run.steering = d.steering; show(run); }
  });
  events.addEventListener("end", (e) => { show(JSON.parse(e.data)); refreshRuns(); });
  events.addEventListener("failed", (e) => { $("form-error").textContent = JSON.parse(e.data).error; });
}

start().catch((e) => { $("control-error").textContent = e.message; });
