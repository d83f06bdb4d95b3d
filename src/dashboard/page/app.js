// baton dashboard: runs, a run's curves, several runs overlaid, a search's trials. Reads /api/
// every second and updates what is on the screen (no reload).
'use strict';

const token = new URLSearchParams(location.search).get('token');
const state = { route: '', charts: {}, sort: { key: 'started', down: true }, filter: '', selected: new Set(),
                metrics: null, x: 'step', smoothing: 0, log: false, busy: false };

function api(path) {
  const sep = path.includes('?') ? '&' : '?';
  return fetch('/api/' + path + (token ? sep + 'token=' + encodeURIComponent(token) : ''))
    .then(r => r.ok ? r.json() : r.json().then(e => Promise.reject(new Error(e.error || r.statusText))));
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'onclick' || k === 'oninput' || k === 'onchange') e[k] = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
  return e;
}

function fmt(v) {
  if (v == null || v === '') return '';
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 1e5 || Math.abs(v) < 1e-3 ? v.toExponential(3) : String(Number(v.toPrecision(6)));
}
function duration(s) {
  if (s == null || !isFinite(s)) return '';
  if (s < 120) return s.toFixed(1) + ' s';
  if (s < 7200) return (s / 60).toFixed(1) + ' min';
  return (s / 3600).toFixed(1) + ' h';
}
function when(t) { return t ? new Date(t * 1000).toLocaleString() : ''; }
function link(href, text) { return el('a', { href }, text); }

// ---- the runs and searches page --------------------------------------------------------------

const runColumns = [
  ['name', 'name'], ['status', 'status'], ['steps', 'steps'], ['epochs', 'epochs'],
  ['best_accuracy', 'best eval/accuracy'], ['train_loss', 'train/loss'], ['samples_per_s', 'samples/s'],
  ['duration_s', 'duration'], ['started', 'started'],
];

function runCell(run, key) {
  const v = run[key];
  if (key === 'name') return el('td', {}, link('#/run/' + run.id, v));
  if (key === 'status') return el('td', { class: 'status-' + v }, v);
  if (key === 'duration_s') return el('td', { class: 'num' }, duration(v));
  if (key === 'started') return el('td', {}, when(v));
  return el('td', { class: typeof v === 'number' ? 'num' : '' }, fmt(v));
}

function runsTable(runs) {
  const sorted = runs.filter(r => !state.filter || (r.name + ' ' + r.path + ' ' + r.status).includes(state.filter));
  const { key, down } = state.sort;
  sorted.sort((a, b) => {
    const x = a[key], y = b[key];
    const c = x == null ? 1 : y == null ? -1 : x < y ? -1 : x > y ? 1 : 0;
    return down ? -c : c;
  });
  const head = el('tr', {}, el('th', {}, ''));
  for (const [k, title] of runColumns) {
    head.append(el('th', { onclick: () => { state.sort = { key: k, down: state.sort.key === k ? !state.sort.down : false }; state.route = null; render(); } },
                   title + (key === k ? (down ? ' ▼' : ' ▲') : '')));
  }
  const body = el('tbody');
  for (const r of sorted) {
    const box = el('input', { type: 'checkbox', onchange: e => { e.target.checked ? state.selected.add(r.id) : state.selected.delete(r.id); } });
    box.checked = state.selected.has(r.id);
    const row = el('tr', { 'data-run': r.id }, el('td', {}, box));
    for (const [k] of runColumns) row.append(runCell(r, k));
    body.append(row);
  }
  return el('table', { id: 'runs' }, el('thead', {}, head), body);
}

function searchesTable(searches) {
  const body = el('tbody');
  for (const s of searches) {
    const statuses = Object.entries(s.statuses || {}).map(([k, n]) => n + ' ' + k).join(', ');
    body.append(el('tr', { 'data-search': s.id }, el('td', {}, link('#/search/' + s.id, s.url)),
                   el('td', { class: 'num' }, s.trials), el('td', {}, statuses), el('td', { class: 'num' }, fmt(s.best)),
                   el('td', {}, s.direction), el('td', { class: 'problem' }, s.problem || '')));
  }
  return el('table', { id: 'searches' }, el('thead', {}, el('tr', {}, ...['storage', 'trials', 'statuses', 'best', 'direction', ''].map(t => el('th', {}, t)))), body);
}

async function showHome(view) {
  const data = await api('runs');
  const filter = el('input', { type: 'search', placeholder: 'filter runs', value: state.filter, id: 'filter' });
  filter.oninput = () => { state.filter = filter.value; document.getElementById('runs').replaceWith(runsTable(data.runs)); };
  const compare = el('button', { id: 'compare', onclick: () => { if (state.selected.size) location.hash = '#/compare/' + [...state.selected].join(','); } }, 'compare selected');
  const parts = [el('h2', {}, 'Runs (' + data.runs.length + ')'), el('div', { class: 'controls' }, filter, compare), runsTable(data.runs)];
  if (data.searches.length) parts.push(el('h2', {}, 'Searches'), searchesTable(data.searches));
  for (const p of data.problems) parts.push(el('p', { class: 'problem' }, p));
  const focused = document.activeElement && document.activeElement.id === 'filter';
  view.replaceChildren(...parts);
  if (focused) { const f = document.getElementById('filter'); f.focus(); f.setSelectionRange(f.value.length, f.value.length); }
}

// ---- curves ----------------------------------------------------------------------------------

const palette = ['#2f6fde', '#e0702b', '#2a9d55', '#c53b5b', '#7b52c4', '#8c6d1f', '#1aa3b5', '#666'];

function smooth(ys, weight) {
  if (!weight) return ys;
  let last = null;
  return ys.map(y => (last = last == null ? y : last * weight + y * (1 - weight)));
}

function chartFor(box, id) {
  if (typeof Chart === 'undefined') { box.append(el('p', { class: 'muted' }, 'Chart.js is not installed (libjs-chart.js): no curves')); return null; }
  const canvas = el('canvas', { 'data-metric': id });
  box.append(canvas);
  return new Chart(canvas, {
    type: 'line', data: { datasets: [] },
    options: { animation: false, parsing: false, normalized: true, maintainAspectRatio: false,
               elements: { point: { radius: 0 }, line: { borderWidth: 1.5 } },
               scales: { x: { type: 'linear', title: { display: true, text: '' } }, y: { type: 'linear' } },
               plugins: { legend: { display: true, labels: { boxWidth: 12 } } } },
  });
}

function updateChart(chart, series, xTitle) {
  chart.data.datasets = series.map((s, i) => ({
    label: s.label, borderColor: s.color || palette[i % palette.length], backgroundColor: s.color || palette[i % palette.length],
    borderDash: s.dash ? [4, 3] : [], showLine: s.showLine !== false, pointRadius: s.showLine === false || s.x.length < 40 ? 2 : 0,
    data: s.x.map((x, j) => ({ x, y: s.y[j] })),
  }));
  chart.options.scales.x.title.text = xTitle;
  chart.options.scales.y.type = state.log ? 'logarithmic' : 'linear';
  chart.update('none');
}

function curveControls(keys, rerender) {
  const picks = el('div', { class: 'controls', id: 'metric-picks' });
  for (const k of keys) {
    const box = el('input', { type: 'checkbox', value: k, onchange: e => { e.target.checked ? state.metrics.add(k) : state.metrics.delete(k); rerender(true); } });
    box.checked = state.metrics.has(k);
    picks.append(el('label', {}, box, ' ' + k));
  }
  const x = el('select', { id: 'x-axis', onchange: e => { state.x = e.target.value; rerender(false); } },
               ...['step', 'epoch', 'time'].filter(v => v !== 'epoch' || keys.includes('wall_clock/epoch_s'))
                 .map(v => { const o = el('option', { value: v }, { step: 'batches', epoch: 'epochs', time: 'time (s)' }[v]); o.selected = state.x === v; return o; }));
  const slider = el('input', { type: 'range', min: 0, max: 0.99, step: 0.01, value: state.smoothing, id: 'smoothing',
                               oninput: e => { state.smoothing = Number(e.target.value); rerender(false); } });
  const log = el('input', { type: 'checkbox', id: 'log-scale', onchange: e => { state.log = e.target.checked; rerender(false); } });
  log.checked = state.log;
  return [el('div', { class: 'controls' }, el('label', {}, 'x: ', x), el('label', {}, 'smoothing ', slider), el('label', {}, log, ' log scale')), picks];
}

function defaultMetrics(keys) {
  const preferred = keys.filter(k => /^(train\/loss|eval\/accuracy|eval\/loss)$/.test(k));
  return new Set(preferred.length ? preferred : keys.slice(0, 2));
}

// Curves of `runs` (ids, names) for the chosen metrics, overlaid.
async function drawCurves(container, runs, rebuild) {
  if (rebuild) { container.replaceChildren(); state.charts = {}; }
  const keys = [...state.metrics];
  const data = await Promise.all(runs.map(r => api('runs/' + r.id + '/series?x=' + state.x + '&points=1200&keys=' + encodeURIComponent(keys.join(',')))));
  for (const key of keys) {
    if (!state.charts[key]) {
      const box = el('div', { class: 'chart' }, el('h3', {}, key));
      container.append(box);
      state.charts[key] = chartFor(box, key);
    }
    const chart = state.charts[key];
    if (!chart) continue;
    const series = [];
    runs.forEach((r, i) => { const s = data[i][key]; if (s) series.push({ label: r.name, x: s.x, y: smooth(s.y, state.smoothing), color: palette[i % palette.length] }); });
    updateChart(chart, series, { step: 'batches', epoch: 'epochs', time: 'seconds' }[state.x]);
  }
}

// ---- one run, or several overlaid -------------------------------------------------------------

function lastValues(detail, series) {
  const body = el('tbody');
  for (const m of detail.metrics) {
    const s = series[m.name];
    body.append(el('tr', { 'data-metric': m.name }, el('td', {}, m.name), el('td', { class: 'num' }, s ? fmt(s.y[s.y.length - 1]) : ''), el('td', { class: 'num' }, m.points)));
  }
  return el('table', { id: 'last-values' }, el('thead', {}, el('tr', {}, el('th', {}, 'metric'), el('th', {}, 'last'), el('th', {}, 'points'))), body);
}

function runFacts(d) {
  const r = d.row;
  const facts = el('table', { id: 'run-facts' });
  for (const [k, v] of [['status', r.status], ['path', r.path], ['steps', r.steps], ['started', when(r.started)], ['duration', duration(r.duration_s)], ['samples/s', fmt(r.samples_per_s)]]) {
    facts.append(el('tr', {}, el('th', {}, k), el('td', {}, v)));
  }
  return facts;
}

function filesTable(id, files, href) {
  const body = el('tbody');
  for (const f of files) body.append(el('tr', {}, el('td', {}, href ? link(href(f.name), f.name) : f.name), el('td', { class: 'num' }, (f.bytes / 1048576).toFixed(2) + ' MiB')));
  return el('table', { id }, el('thead', {}, el('tr', {}, el('th', {}, 'file'), el('th', {}, 'size'))), body);
}

async function showRun(view, id, first) {
  const d = await api('runs/' + id);
  const keys = d.metrics.map(m => m.name);
  if (!state.metrics) state.metrics = defaultMetrics(keys);
  if (first) {
    const charts = el('div', { class: 'charts', id: 'charts' });
    const rerender = rebuild => drawCurves(charts, [{ id, name: d.row.name }], rebuild);
    const tracesHref = n => '/api/runs/' + id + '/traces/' + encodeURIComponent(n) + (token ? '?token=' + encodeURIComponent(token) : '');
    view.replaceChildren(el('h2', { id: 'run-title' }, 'Run ' + d.row.name), runFacts(d), ...curveControls(keys, rerender), charts,
      el('h2', {}, 'Last values'), el('div', { id: 'last-box' }),
      el('h2', {}, 'Checkpoints'), filesTable('checkpoints', d.checkpoints),
      el('h2', {}, 'Traces'), el('p', { class: 'muted' }, 'Chrome trace format: open in chrome://tracing or ui.perfetto.dev'), filesTable('traces', d.traces, tracesHref),
      el('h2', {}, 'Summary'), el('pre', { id: 'summary' }, d.summary ? JSON.stringify(d.summary, null, 2) : '(none yet: running or stopped)'),
      el('h2', {}, 'Recipe'), el('pre', { id: 'recipe' }, d.recipe || '(no recipe.yaml)'),
      ...d.problems.map(p => el('p', { class: 'problem' }, p)));
    await rerender(true);
  } else {
    document.getElementById('run-facts').replaceWith(runFacts(d));
    await drawCurves(document.getElementById('charts'), [{ id, name: d.row.name }], false);
  }
  const all = await api('runs/' + id + '/series?points=3&keys=' + encodeURIComponent(keys.join(',')));
  document.getElementById('last-box').replaceChildren(lastValues(d, all));
}

async function showCompare(view, ids, first) {
  const details = await Promise.all(ids.map(id => api('runs/' + id)));
  const runs = details.map((d, i) => ({ id: ids[i], name: d.row.name }));
  const keys = [...new Set(details.flatMap(d => d.metrics.map(m => m.name)))].sort();
  if (!state.metrics) state.metrics = defaultMetrics(keys);
  if (first) {
    const charts = el('div', { class: 'charts', id: 'charts' });
    view.replaceChildren(el('h2', { id: 'run-title' }, 'Runs ' + runs.map(r => r.name).join(', ')), ...curveControls(keys, rebuild => drawCurves(charts, runs, rebuild)), charts);
    await drawCurves(charts, runs, true);
  } else {
    await drawCurves(document.getElementById('charts'), runs, false);
  }
}

// ---- a search --------------------------------------------------------------------------------

function paramText(p) {
  return Object.entries(p || {}).map(([k, v]) => k + '=' + (v && typeof v === 'object' ? JSON.stringify(v) : fmt(v))).join(' ');
}

// The trials table: 500 rows a page (10,000 rows in the DOM would take seconds to lay out).
const trialsPage = 500;
function trialsTable(s) {
  const body = el('tbody');
  const pbt = populationBased(s);
  const pages = Math.max(1, Math.ceil(s.trials_table.length / trialsPage));
  state.trialsPage = Math.min(state.trialsPage || 0, pages - 1);
  for (const t of s.trials_table.slice(state.trialsPage * trialsPage, (state.trialsPage + 1) * trialsPage)) {
    const inter = t.intermediate || [];
    body.append(el('tr', { 'data-trial': t.id, class: t.pruned ? 'pruned' : '' },
      el('td', { class: 'num' }, t.run ? link('#/run/' + t.run, t.id) : t.id), el('td', {}, t.pruned ? 'pruned' : t.status),
      el('td', {}, paramText(t.parameters)), el('td', { class: 'num' }, inter.length ? fmt(inter[inter.length - 1].value) + ' @' + inter[inter.length - 1].step : ''),
      el('td', { class: 'num' }, t.values ? t.values.map(fmt).join(', ') : fmt(t.final)), el('td', { class: 'num' }, duration(t.duration_s)),
      ...(pbt ? [el('td', { class: 'lineage' }, lineageText(t))] : []), el('td', { class: 'problem' }, t.error || '')));
  }
  const head = el('tr', {}, ...['trial', 'status', 'parameters', 'last intermediate', 'final', 'duration', ...(pbt ? ['lineage'] : []), 'error'].map(t => el('th', {}, t)));
  const table = el('table', { id: 'trials' }, el('thead', {}, head), body);
  if (pages === 1) return table;
  const go = d => () => { state.trialsPage = Math.max(0, Math.min(pages - 1, state.trialsPage + d)); document.getElementById('trials-box').replaceChildren(trialsTable(s)); };
  return el('div', {}, el('div', { class: 'controls' }, el('button', { onclick: go(-1) }, '◀'), 'page ' + (state.trialsPage + 1) + ' of ' + pages, el('button', { onclick: go(1) }, '▶')), table);
}

// Parallel coordinates: one vertical axis per parameter and one for the value (several
// objectives: one per objective, a line coloured by its non-dominated rank); a line per trial.
function parallelCoordinates(s) {
  const max = s.direction !== 'minimize';
  const several = multiObjective(s);
  const rank = t => s.ranks[t.id];
  // At most the best 1,000 trials: more lines only darken the picture and slow the page.
  const trials = several
    ? s.trials_table.filter(t => rank(t) !== undefined).sort((a, b) => rank(a) - rank(b)).slice(0, 1000)
    : s.trials_table.filter(t => t.status === 'trained' && typeof t.final === 'number')
      .sort((a, b) => max ? b.final - a.final : a.final - b.final).slice(0, 1000);
  const objectiveNames = several ? s.objectives.map(o => o.metric + (o.direction === 'minimize' ? ' ↓' : ' ↑')) : [];
  const flat = trials.map(t => { const o = {}; const walk = (p, pre) => { for (const [k, v] of Object.entries(p || {})) { if (v && typeof v === 'object') { o[pre + k] = v._name; walk(Object.fromEntries(Object.entries(v).filter(([kk]) => kk !== '_name')), pre + k + '.'); } else o[pre + k] = v; } }; walk(t.parameters, ''); if (several) { objectiveNames.forEach((n, i) => { o['\u0000' + n] = t.values[i]; }); o.value = -rank(t); } else o.value = t.final; return o; });
  const names = several
    ? [...new Set(flat.flatMap(o => Object.keys(o)).filter(k => k !== 'value' && k[0] !== '\u0000'))].sort().concat(objectiveNames.map(n => '\u0000' + n))
    : [...new Set(flat.flatMap(o => Object.keys(o)).filter(k => k !== 'value'))].sort().concat(['value']);
  const W = Math.max(480, names.length * 140), H = 300, pad = 30;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'parallel'); svg.setAttribute('id', 'parallel'); svg.setAttribute('width', W); svg.setAttribute('height', H + 2 * pad);
  const scale = names.map(n => {
    const vals = flat.map(o => o[n]).filter(v => v !== undefined);
    if (vals.every(v => typeof v === 'number')) { const lo = Math.min(...vals), hi = Math.max(...vals); return v => typeof v === 'number' ? (hi > lo ? (v - lo) / (hi - lo) : 0.5) : null; }
    const cats = [...new Set(vals.map(String))].sort();
    return v => v === undefined ? null : (cats.indexOf(String(v)) + 0.5) / cats.length;
  });
  const vals = flat.map(o => o.value), lo = Math.min(...vals), hi = Math.max(...vals);
  names.forEach((n, i) => {
    const x = pad + i * (W - 2 * pad) / Math.max(1, names.length - 1);
    const axis = document.createElementNS(ns, 'line');
    axis.setAttribute('x1', x); axis.setAttribute('x2', x); axis.setAttribute('y1', pad); axis.setAttribute('y2', pad + H); axis.setAttribute('stroke', '#999');
    const label = document.createElementNS(ns, 'text');
    label.setAttribute('x', x); label.setAttribute('y', pad - 8); label.setAttribute('text-anchor', 'middle'); label.setAttribute('font-size', '11'); label.textContent = n.replace('\u0000', '');
    svg.append(axis, label);
  });
  for (const o of flat) {
    const good = hi > lo ? (max || several ? (o.value - lo) / (hi - lo) : (hi - o.value) / (hi - lo)) : 1;
    const pts = names.map((n, i) => { const f = scale[i](o[n]); return f == null ? null : [pad + i * (W - 2 * pad) / Math.max(1, names.length - 1), pad + H - f * H]; }).filter(Boolean);
    const line = document.createElementNS(ns, 'polyline');
    line.setAttribute('points', pts.map(p => p.join(',')).join(' ')); line.setAttribute('fill', 'none');
    line.setAttribute('stroke', `hsl(${Math.round(220 * (1 - good))}, 70%, 45%)`); line.setAttribute('stroke-opacity', 0.6);
    svg.append(line);
  }
  return svg;
}

function multiObjective(s) { return Array.isArray(s.objectives) && s.objectives.length >= 2 && s.ranks; }

// Two objectives: every comparable trial as a point, the Pareto front marked and joined; a point
// opens its trial (its run, or its row in the table).
function updateParetoChart(s) {
  const box = document.getElementById('pareto-box');
  if (!box || s.objectives.length !== 2) return;
  const chart = searchChart(box, 'pareto', 'scatter');
  if (!chart) return;
  const onFront = new Set(s.pareto);
  const point = t => ({ x: t.values[0], y: t.values[1], trial: t.id });
  const comparable = s.trials_table.filter(t => s.ranks[t.id] !== undefined);
  const front = comparable.filter(t => onFront.has(t.id)).map(point).sort((a, b) => a.x - b.x);
  chart.data.datasets = [
    { label: 'trials', showLine: false, pointRadius: 3, borderColor: '#aab', backgroundColor: '#aab', data: comparable.filter(t => !onFront.has(t.id)).map(point) },
    { label: 'Pareto front (' + front.length + ')', showLine: true, stepped: false, pointRadius: 5, borderColor: '#2f6fde', backgroundColor: '#2f6fde', data: front }];
  chart.options.scales.x.title = { display: true, text: s.objectives[0].metric + ' (' + s.objectives[0].direction + ')' };
  chart.options.scales.y.title = { display: true, text: s.objectives[1].metric + ' (' + s.objectives[1].direction + ')' };
  chart.options.onClick = (event, elements) => {
    if (!elements.length) return;
    const p = chart.data.datasets[elements[0].datasetIndex].data[elements[0].index];
    const t = s.trials_table.find(r => r.id === p.trial);
    if (t && t.run) { location.hash = '#/run/' + t.run; return; }
    const row = document.querySelector('#trials tr[data-trial="' + p.trial + '"]');
    if (row) { row.scrollIntoView({ block: 'center' }); row.classList.add('picked'); setTimeout(() => row.classList.remove('picked'), 2000); }
  };
  chart.update('none');
}

// Population-based training: a row per trial along the steps, and where a trial took another's
// state a dashed line from that trial's row to its own at the interval's end.
function populationBased(s) { return s.trials_table.some(t => (t.exploits || []).length); }
function updateLineageChart(s) {
  const box = document.getElementById('lineage-box');
  if (!box) return;
  const chart = searchChart(box, 'lineage', 'scatter');
  if (!chart) return;
  const last = t => { const inter = t.intermediate || []; return inter.length ? inter[inter.length - 1].step : 0; };
  const rows = s.trials_table.map((t, i) => ({ label: 'trial ' + t.id, showLine: true, pointRadius: 2, borderWidth: 2,
    borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length],
    data: [{ x: 0, y: t.id }, ...(t.intermediate || []).map(v => ({ x: v.step, y: t.id }))] }));
  const exploits = [];
  for (const t of s.trials_table) {
    for (const e of t.exploits || []) {
      exploits.push({ label: 'trial ' + t.id + ' <- ' + e.from + ' at ' + e.at, showLine: true, borderDash: [5, 4], borderWidth: 1.5,
        pointRadius: [0, 4], borderColor: '#c53b5b', backgroundColor: '#c53b5b', data: [{ x: e.step, y: e.from }, { x: e.step, y: t.id }] });
    }
  }
  chart.data.datasets = [...rows, ...exploits];
  chart.options.plugins.legend.display = false;
  chart.options.scales.x.title = { display: true, text: 'step (batch)' };
  chart.options.scales.y.title = { display: true, text: 'trial' };
  chart.options.scales.y.ticks = { stepSize: 1, precision: 0 };
  chart.options.scales.x.max = Math.max(1, ...s.trials_table.map(last));
  chart.update('none');
}

function lineageText(t) {
  return (t.exploits || []).map(e => '<- ' + e.from + ' at ' + e.at + (Object.keys(e.changes || {}).length
    ? ' (' + Object.entries(e.changes).map(([k, v]) => k + ' ' + fmt(v[0]) + '→' + fmt(v[1])).join(', ') + ')' : '')).join('; ');
}

let searchCharts = {};
function searchChart(box, id, type) {
  if (searchCharts[id]) return searchCharts[id];
  if (typeof Chart === 'undefined') return null;
  const canvas = el('canvas', { 'data-chart': id });
  box.append(canvas);
  searchCharts[id] = new Chart(canvas, { type, data: { labels: [], datasets: [] },
    options: { animation: false, maintainAspectRatio: false, indexAxis: type === 'bar' ? 'y' : 'x', parsing: type === 'bar',
               scales: type === 'bar' ? {} : { x: { type: 'linear' }, y: { type: 'linear' } }, plugins: { legend: { display: type !== 'bar' } } } });
  return searchCharts[id];
}

function updateSearchCharts(s) {
  if (multiObjective(s)) updateParetoChart(s);
  if (populationBased(s)) updateLineageChart(s);
  const history = searchChart(document.getElementById('history-box'), 'history', 'line');
  if (history) {
    history.data.datasets = [
      { label: 'value', showLine: false, pointRadius: 3, borderColor: '#aab', backgroundColor: '#aab', data: s.history.map(h => ({ x: h.trial, y: h.value })) },
      { label: 'best so far', stepped: true, pointRadius: 0, borderColor: '#2f6fde', data: s.history.map(h => ({ x: h.trial, y: h.best })) }];
    history.update('none');
  }
  const inter = searchChart(document.getElementById('intermediate-box'), 'intermediate', 'line');
  if (inter) {
    inter.data.datasets = s.trials_table.filter(t => (t.intermediate || []).length).slice(-200).map((t, i) => ({
      label: 'trial ' + t.id + (t.pruned ? ' (pruned)' : ''), pointRadius: t.intermediate.length < 3 ? 2 : 0, borderWidth: 1.2, borderDash: t.pruned ? [4, 3] : [],
      borderColor: t.pruned ? '#c53b5b' : palette[i % palette.length], data: t.intermediate.map(v => ({ x: v.step, y: v.value })) }));
    inter.options.plugins.legend.display = inter.data.datasets.length <= 12;
    inter.update('none');
  }
  const imp = searchChart(document.getElementById('importance-box'), 'importance', 'bar');
  if (imp) {
    document.getElementById('importance-note').textContent = s.importance.length ? '' : 'after 8 finished trials';
    imp.data.labels = s.importance.map(i => i.parameter);
    imp.data.datasets = [{ label: 'share of the variance', backgroundColor: '#2f6fde', data: s.importance.map(i => i.importance) }];
    imp.update('none');
  }
}

async function showSearch(view, id, first) {
  const s = await api('searches/' + id);
  if (first) {
    searchCharts = {};
    const several = multiObjective(s);
    view.replaceChildren(el('h2', { id: 'search-title' }, 'Search ' + s.url), el('p', { id: 'search-facts' }),
      several && s.objectives.length === 2 ? el('div', { class: 'charts' }, el('div', { class: 'chart', id: 'pareto-box' }, el('h3', {}, 'the objectives: every trial, the Pareto front joined (click a point: its trial)'))) : '',
      populationBased(s) ? el('div', { class: 'charts' }, el('div', { class: 'chart', id: 'lineage-box' }, el('h3', {}, 'lineage: each trial along its steps; dashed, a trial taking another\'s state at an interval\'s end'))) : '',
      el('div', { class: 'charts' },
        el('div', { class: 'chart', id: 'history-box' }, el('h3', {}, several ? 'best so far of the first objective, ' + s.objectives[0].metric + ' (among every trial)' : 'best so far')),
        el('div', { class: 'chart', id: 'intermediate-box' }, el('h3', {}, 'intermediate values (pruned: dashed; the latest 200 trials)')),
        el('div', { class: 'chart', id: 'importance-box' }, el('h3', {}, 'parameter importance (ε²: the share of the value\'s variance a parameter explains alone)'), el('p', { class: 'muted', id: 'importance-note' }))),
      el('h2', {}, several ? 'Parameters against the objectives (the 1,000 best ranked trials; colour: non-dominated rank)' : 'Parameters against the value (the best 1,000 trials)'), el('div', { id: 'parallel-box' }),
      el('h2', {}, 'Trials'), el('div', { id: 'trials-box' }));
  }
  const counts = Object.entries(s.statuses).map(([k, n]) => n + ' ' + k).join(', ');
  const outcome = multiObjective(s) ? 'Pareto front ' + s.pareto.length + ' trial(s) of ' + s.objectives.map(o => o.metric + ' (' + o.direction + ')').join(', ') : 'best ' + fmt(s.best) + ' (' + s.direction + ')';
  document.getElementById('search-facts').textContent = s.trials + ' trials (' + counts + '), ' + outcome + (s.problem ? ' — ' + s.problem : '');
  document.getElementById('parallel-box').replaceChildren(parallelCoordinates(s));
  document.getElementById('trials-box').replaceChildren(trialsTable(s));
  updateSearchCharts(s);
}

// ---- routing and the live loop ---------------------------------------------------------------

// The page of the hash route: built when the route changed, else updated in place.
async function render() {
  if (state.busy) return;
  state.busy = true;
  const view = document.getElementById('view');
  const route = location.hash.replace(/^#\/?/, '');
  const first = route !== state.route;
  if (first) { state.metrics = null; state.charts = {}; state.x = 'step'; }
  const [page, arg] = route.split('/');
  try {
    if (page === 'run') await showRun(view, arg, first);
    else if (page === 'compare') await showCompare(view, arg.split(','), first);
    else if (page === 'search') await showSearch(view, arg, first);
    else await showHome(view);
    state.route = route;
    document.getElementById('status').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById('status').textContent = 'cannot read the server: ' + e.message;
  } finally {
    state.busy = false;
  }
}

state.route = null;
window.addEventListener('hashchange', () => render());
render();
setInterval(render, 1000);
