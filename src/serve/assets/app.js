// The marathon dashboard (served by `marathon serve`, inlined in `marathon report` files).
// Plain JavaScript, no build step. Every text from a run is shown with textContent, never as HTML:
// the model writes strategies, notes and candidates, and is not trusted.
//
// Served: the Runs page at #, one run at #run=ID; data from /api/..., live through server-sent
// events. Report: the data is the JSON block #marathon-data, shown once, with no request at all.
'use strict';

(function () {
  const dataBlock = document.getElementById('marathon-data');
  const REPORT = dataBlock ? JSON.parse(dataBlock.textContent) : null;

  // ---- access: the token (needed when the server is not on loopback) travels as a header on
  // fetches and as ?token= on event streams (EventSource cannot send headers).
  let token = null;
  if (!REPORT) {
    const q = new URLSearchParams(location.search);
    if (q.get('token')) {
      sessionStorage.setItem('marathon-token', q.get('token'));
      history.replaceState(null, '', location.pathname + location.hash);
    }
    token = sessionStorage.getItem('marathon-token');
  }

  async function api(path, options) {
    const o = Object.assign({}, options || {});
    o.headers = Object.assign({}, o.headers || {});
    if (token) o.headers.Authorization = 'Bearer ' + token;
    const res = await fetch(path, o);
    let body = null;
    try {
      body = await res.json();
    } catch (e) {
      body = { error: 'the server sent no JSON (' + res.status + ')' };
    }
    if (!res.ok) throw new Error((body && body.error) || 'HTTP ' + res.status);
    return body;
  }

  function stream(path) {
    const sep = path.includes('?') ? '&' : '?';
    return new EventSource(token ? path + sep + 'token=' + encodeURIComponent(token) : path);
  }

  // ---- DOM helpers
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
    return e;
  }
  const $ = (sel) => document.querySelector(sel);
  // Replaces a node's children (null, undefined and false are left out, as in el()).
  function fill(node, ...children) {
    node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  }

  function num(x, digits) {
    if (x === null || x === undefined || Number.isNaN(x)) return '–';
    return Number(x).toPrecision(digits || 4).replace(/\.?0+(e|$)/, '$1');
  }
  function duration(s) {
    if (s === null || s === undefined) return '–';
    if (s < 120) return s.toFixed(s < 10 ? 1 : 0) + ' s';
    if (s < 7200) return (s / 60).toFixed(1) + ' min';
    return (s / 3600).toFixed(2) + ' h';
  }
  function age(s) {
    if (s < 1) return 'just now';
    return duration(s) + ' ago';
  }
  function money(x) {
    return '$' + Number(x || 0).toFixed(x >= 100 ? 0 : 2);
  }
  function short(hash) {
    return hash ? hash.slice(0, 12) : '';
  }
  function phaseBadge(phase) {
    return el('span', { class: 'phase phase-' + phase, text: phase });
  }

  // The server clock minus ours, in µs, so that ages tick locally between updates.
  let clockSkewUs = 0;
  function ageOf(row) {
    if (!row.last_event || !row.last_event.at_us) return 0;
    if (REPORT) return row.last_event.age_s;  // as the report was written
    return Math.max(0, (Date.now() * 1000 + clockSkewUs - row.last_event.at_us) / 1e6);
  }

  let cleanup = [];
  function leaveView() {
    for (const f of cleanup) f();
    cleanup = [];
  }
  function setConn(state, text) {
    const c = $('#conn');
    c.className = 'conn ' + state;
    c.textContent = text;
  }

  // ---- Runs page
  const RUN_COLUMNS = [
    { key: 'id', label: 'run', value: (r) => r.id },
    { key: 'task', label: 'task', value: (r) => r.task || '' },
    { key: 'phase', label: 'state', value: (r) => r.phase },
    { key: 'best', label: 'best / target', num: true, value: (r) => (r.best_score === null || r.best_score === undefined ? -Infinity : r.best_score) },
    { key: 'evals', label: 'evaluations', num: true, value: (r) => r.evaluations || 0 },
    { key: 'calls', label: 'tool calls', num: true, value: (r) => (r.budget ? r.budget.tool_calls.used : 0) },
    { key: 'wall', label: 'wall', num: true, value: (r) => (r.budget ? r.budget.wall_s.used : 0) },
    { key: 'cost', label: 'cost', num: true, value: (r) => (r.budget ? r.budget.spent_by_this_run.cost_usd : 0) },
    { key: 'last', label: 'last event', num: true, value: (r) => -ageOf(r) },
  ];

  function gaugeText(g, fmt) {
    if (!g) return '–';
    const used = fmt(g.used);
    if (g.limit === null || g.limit === undefined) return used;
    return used + ' / ' + fmt(g.limit) + ' (' + Math.round((100 * g.used) / g.limit) + '%)';
  }

  function runsView() {
    $('#where').textContent = 'runs';
    const view = $('#view');
    fill(view);
    const table = el('table', { id: 'runs' });
    const notice = el('div');
    view.append(el('h1', { text: 'Runs' }), notice, el('div', { class: 'card' }, table));
    let rows = [];
    let sort = { key: 'last', desc: true };

    function render() {
      const col = RUN_COLUMNS.find((c) => c.key === sort.key) || RUN_COLUMNS[0];
      const sorted = rows.slice().sort((a, b) => {
        const x = col.value(a), y = col.value(b);
        const c = x < y ? -1 : x > y ? 1 : 0;
        return sort.desc ? -c : c;
      });
      const head = el('tr', {}, RUN_COLUMNS.map((c) => el('th', {
        class: 'sortable' + (c.num ? ' num' : '') + (c.key === sort.key ? (sort.desc ? ' sorted-desc' : ' sorted-asc') : ''),
        'data-key': c.key, text: c.label,
        onclick: () => { sort = { key: c.key, desc: c.key === sort.key ? !sort.desc : !!c.num }; render(); },
      })));
      const body = el('tbody', {}, sorted.map((r) => {
        if (r.error) {
          return el('tr', { 'data-run': r.id }, el('td', {}, r.id), el('td'), el('td', {}, phaseBadge('unreadable')),
            el('td', { colspan: 6, class: 'muted', text: r.error }));
        }
        const target = r.goal && r.goal.target !== null && r.goal.target !== undefined ? ' / ' + num(r.goal.target) : '';
        return el('tr', { 'data-run': r.id },
          el('td', {}, el('a', { href: '#run=' + encodeURIComponent(r.id), text: r.id })),
          el('td', { text: r.task || '' }),
          el('td', {}, phaseBadge(r.phase)),
          el('td', { class: 'num', text: num(r.best_score) + target }),
          el('td', { class: 'num', text: String(r.evaluations) }),
          el('td', { class: 'num', text: gaugeText(r.budget.tool_calls, (x) => String(Math.round(x))) }),
          el('td', { class: 'num', text: gaugeText(r.budget.wall_s, duration) }),
          el('td', { class: 'num', text: r.budget.replayed ? money(r.budget.spent_by_this_run.cost_usd) + ' (replay)' : gaugeText(r.budget.cost_usd, money) }),
          el('td', { class: 'num age', text: (r.last_event.type || '–') + ', ' + age(ageOf(r)) }));
      }));
      fill(table, el('thead', {}, head), body);
      if (!rows.length) fill(notice, el('p', { class: 'muted', text: 'No runs in this folder yet.' }));
      else fill(notice);
    }

    function accept(msg) {
      rows = msg.runs;
      clockSkewUs = msg.now_us - Date.now() * 1000;
      render();
    }
    api('/api/runs').then(accept).catch((e) => fill(notice, el('div', { class: 'notice', text: e.message })));
    const es = stream('/api/stream/runs');
    es.addEventListener('runs', (ev) => { accept(JSON.parse(ev.data)); setConn('live', 'live'); });
    es.onerror = () => setConn('down', 'reconnecting…');
    const tick = setInterval(() => {
      for (const td of document.querySelectorAll('#runs td.age')) {
        const r = rows.find((x) => x.id === td.parentElement.dataset.run);
        if (r) td.textContent = (r.last_event.type || '–') + ', ' + age(ageOf(r));
      }
    }, 1000);
    cleanup.push(() => { es.close(); clearInterval(tick); });
  }

  // ---- one run
  const KIND_STYLE = {
    ok: { label: 'correct', color: '#1a7f37', pointStyle: 'circle' },
    incorrect: { label: 'incorrect', color: '#cf222e', pointStyle: 'crossRot' },
    violating: { label: 'rule violation', color: '#b35900', pointStyle: 'triangle' },
    failed: { label: 'failed (no score)', color: '#6e40c9', pointStyle: 'rect' },
  };
  const MARKER_COLOR = { compaction: '#0a58ca', goal: '#b35900', pause: '#6e6e73', resume: '#6e6e73', finish: '#1d1d1f' };

  // Vertical lines for compactions, goal changes, pauses and the finish.
  const markerPlugin = {
    id: 'marathonMarkers',
    afterDatasetsDraw(chart, args, opts) {
      const xs = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      for (const m of (opts && opts.markers) || []) {
        const x = xs.getPixelForValue(m.x);
        if (!(x >= area.left && x <= area.right)) continue;
        ctx.save();
        ctx.strokeStyle = MARKER_COLOR[m.kind] || '#888';
        ctx.setLineDash(m.kind === 'compaction' ? [4, 3] : [2, 2]);
        ctx.beginPath();
        ctx.moveTo(x, area.top);
        ctx.lineTo(x, area.bottom);
        ctx.stroke();
        ctx.fillStyle = ctx.strokeStyle;
        ctx.font = '10px sans-serif';
        ctx.fillText(m.kind, x + 2, area.top + 10);
        ctx.restore();
      }
    },
  };
  if (window.Chart) Chart.register(markerPlugin);

  function makeChart(canvas, xKey, xLabel, xScale) {
    const datasets = Object.entries(KIND_STYLE).map(([kind, s]) => ({
      type: 'scatter', label: s.label, marathonKind: kind, marathonEval: true, data: [],
      backgroundColor: s.color, borderColor: s.color, pointStyle: s.pointStyle, pointRadius: 4, pointHoverRadius: 6,
    }));
    datasets.push({
      type: 'line', label: 'best so far', marathonBest: true, data: [], stepped: 'before',
      borderColor: '#1d1d1f', borderWidth: 1.5, pointRadius: 0, fill: false,
    });
    datasets.push({
      type: 'line', label: 'baseline', marathonBaseline: true, data: [],
      borderColor: '#6e6e73', borderWidth: 1, borderDash: [6, 4], pointRadius: 0, fill: false,
    });
    const chart = new Chart(canvas, {
      data: { datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: false, normalized: true,
        scales: { x: { type: 'linear', title: { display: true, text: xLabel } }, y: { title: { display: true, text: 'score' } } },
        plugins: {
          marathonMarkers: { markers: [] },
          tooltip: { callbacks: { label: (c) => {
            const e = c.raw && c.raw.e;
            if (!e) return (c.dataset.marathonBaseline ? 'baseline ' : 'best ') + num(c.parsed.y);
            // A failed or refused attempt says why (which rule, which check).
            const why = e.kind !== 'ok' && e.failure ? ' — ' + e.failure.slice(0, 160) : '';
            return '#' + e.seq + ' ' + KIND_STYLE[e.kind].label + ' score ' + num(e.score) + why + (e.strategy ? ' — ' + e.strategy.slice(0, 80) : '');
          } } },
        },
      },
    });
    chart.$marathonX = { key: xKey, scale: xScale };
    return chart;
  }

  // Puts every evaluation in its dataset (one point each; a result with no score sits on the
  // lowest score seen), the baseline as a dashed line, the direction in the axis title, and
  // redraws.
  function fillChart(chart, evaluations, markers, baseline, direction) {
    const xKey = chart.$marathonX.key;
    const xs = chart.$marathonX.scale;
    const scores = evaluations.filter((e) => e.score !== null && e.score !== undefined).map((e) => e.score);
    const floor = scores.length ? Math.min(...scores) : 0;
    const byKind = { ok: [], incorrect: [], violating: [], failed: [] };
    const best = [];
    for (const e of evaluations) {
      const x = e[xKey] * xs;
      byKind[e.kind].push({ x, y: e.score === null || e.score === undefined ? floor : e.score, e });
      if (e.best_after !== null && e.best_after !== undefined) best.push({ x, y: e.best_after });
    }
    const xsAll = evaluations.map((e) => e[xKey] * xs);
    const line = baseline === null || baseline === undefined || !xsAll.length ? []
      : [{ x: Math.min(0, ...xsAll), y: baseline }, { x: Math.max(...xsAll), y: baseline }];
    for (const d of chart.data.datasets) {
      if (d.marathonEval) d.data = byKind[d.marathonKind];
      if (d.marathonBest) d.data = best;
      if (d.marathonBaseline) d.data = line;
    }
    chart.options.scales.y.title.text = direction === 'min' ? 'score (lower is better)'
      : direction === 'max' ? 'score (higher is better)' : 'score';
    chart.options.plugins.marathonMarkers.markers = markers.map((m) => ({ x: m[xKey] * xs, kind: m.kind }));
    chart.update('none');
  }

  function gauges(budget) {
    const items = [
      ['tool calls', budget.tool_calls, (x) => String(Math.round(x))],
      ['wall', budget.wall_s, duration],
      ['tokens', budget.tokens, (x) => (x >= 1e6 ? (x / 1e6).toFixed(2) + ' M' : x >= 1e3 ? (x / 1e3).toFixed(1) + ' k' : String(x))],
      ['cost', budget.cost_usd, money],
      ['GPU', budget.gpu_s, duration],
    ];
    const box = el('div', { class: 'gauges' }, items.map(([name, g, fmt]) => {
      const frac = g.limit ? g.used / g.limit : null;
      const fill = el('div', { class: 'fill' + (frac !== null && frac >= 1 ? ' over' : frac !== null && frac >= 0.8 ? ' high' : '') });
      fill.style.width = frac === null ? '0%' : Math.min(100, 100 * frac).toFixed(1) + '%';
      return el('div', { class: 'gauge', 'data-gauge': name },
        el('div', {}, el('b', { text: name + ' ' }), el('span', { class: 'muted', text: gaugeText(g, fmt) })),
        el('div', { class: 'bar' }, fill));
    }));
    if (budget.replayed) {
      // A replay's gauges count the original's spend again (its budgets stop it where the original
      // stopped); it spent none of it itself.
      box.appendChild(el('div', { class: 'gauge', 'data-gauge': 'replay' },
        el('div', {}, el('b', { text: 'replay ' }), el('span', { class: 'muted', text: budget.replay_note }))));
    }
    const pc = budget.prompt_cache;
    if (pc && pc.prompt_tokens > 0) {
      // The share of prompt tokens the provider served from its prompt cache.
      box.appendChild(el('div', { class: 'gauge', 'data-gauge': 'prompt cache' },
        el('div', {}, el('b', { text: 'prompt cache ' }),
          el('span', { class: 'muted', text: (100 * pc.read_tokens / pc.prompt_tokens).toFixed(1) + '% of prompt tokens read from cache' }))));
    }
    return box;
  }

  // Where evaluations ran (docs/scale-out.md): each slot's or worker's busy share of the run's
  // active time, and the branch this run is when it has several.
  function executorView(x) {
    if (!x) return el('div');
    const lines = (x.usage || []).map((u) => el('li', { 'data-slot': u.name },
      el('b', { text: u.name + ' ' }),
      el('span', { class: 'muted', text: (u.busy_fraction === null ? '-' : Math.round(100 * u.busy_fraction) + '% busy') +
        ' · ' + u.evaluations + ' evaluation' + (u.evaluations === 1 ? '' : 's') + ' · ' + duration(u.busy_s) })));
    return el('div', { id: 'executor' },
      x.branches > 1 ? el('p', { class: 'muted', text: 'branch ' + x.branch + ' of ' + x.branches + ' (docs/scale-out.md)' }) : el('span'),
      lines.length ? el('ul', { class: 'executor' }, lines) : el('span'));
  }

  function diffView(text) {
    if (!text) return el('p', { class: 'muted', text: 'no difference' });
    const pre = el('pre', { class: 'diff scroll' });
    for (const line of text.split('\n')) {
      const cls = line.startsWith('+++') || line.startsWith('---') ? 'hunk' : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk' : null;
      pre.appendChild(cls ? el('span', { class: cls, text: line }) : document.createTextNode(line + '\n'));
    }
    return pre;
  }

  function candidateView(c, title) {
    const files = Object.entries(c.files || {}).map(([path, text]) =>
      el('details', {}, el('summary', { text: path }), el('pre', { class: 'scroll', text: text })));
    return el('div', { id: 'candidate', 'data-candidate': c.candidate },
      el('h2', { text: title + ' ' + short(c.candidate) }),
      c.diff_vs_previous_best !== null && c.diff_vs_previous_best !== undefined
        ? el('div', {}, el('b', { text: 'against the previous best ' + short(c.previous_best) }), diffView(c.diff_vs_previous_best))
        : el('p', { class: 'muted', text: c.previous_best ? 'it was the best before its evaluation' : 'no best before it' }),
      el('div', {}, el('b', { text: 'against the starter' }), diffView(c.diff_vs_starter)),
      el('div', {}, el('b', { text: 'files' }), files));
  }

  function runView(id) {
    $('#where').textContent = id;
    const view = $('#view');
    fill(view, el('p', { class: 'muted', text: 'Loading ' + id + '…' }));
    const load = REPORT ? Promise.resolve(REPORT.run) : api('/api/runs/' + encodeURIComponent(id));
    load.then((detail) => showRun(id, detail)).catch((e) => fill(view, el('div', { class: 'notice', text: e.message })));
  }

  function showRun(id, d) {
    const view = $('#view');
    let evaluations = d.evaluations.slice();
    let markers = d.markers.slice();
    let goalHistory = d.goal_history.slice();
    let notes = d.notes.slice();
    let events = [];
    let lastSeq = d.last_seq;
    let row = d.row;
    let goal = d.state.goal;
    let budget = d.budget;
    let executor = d.executor;
    let summary = d.summary;

    const head = el('div');
    const goalBox = el('div', { class: 'card', id: 'goal' });
    const gaugeBox = el('div', { class: 'card', id: 'budget' });
    const callsCanvas = el('canvas', { id: 'chart-calls' });
    const wallCanvas = el('canvas', { id: 'chart-wall' });
    const attemptsBox = el('div', { class: 'attempts' });
    const candidateBox = el('div', { class: 'card', id: 'candidate-box' });
    const ledgerBox = el('div', { class: 'card', id: 'ledger' });
    const eventsBox = el('div', { class: 'card', id: 'event-stream' });

    fill(view, head,
      el('div', { class: 'grid' }, goalBox, gaugeBox),
      el('div', { class: 'grid', style: 'margin-top:1em' },
        el('div', { class: 'card' }, el('h2', { text: 'Score over tool calls' }), el('div', { class: 'chart-box' }, callsCanvas)),
        el('div', { class: 'card' }, el('h2', { text: 'Score over wall time' }), el('div', { class: 'chart-box' }, wallCanvas))),
      el('div', { class: 'card', style: 'margin-top:1em' }, el('h2', { text: 'Attempts' }), attemptsBox),
      candidateBox, ledgerBox, eventsBox);
    candidateBox.hidden = true;

    const callsChart = makeChart(callsCanvas, 'tool_calls', 'tool calls', 1);
    const wallChart = makeChart(wallCanvas, 'wall_s', 'wall time (min)', 1 / 60);

    // The best's re-measurements (docs/evaluation.md, "Confirmed best"), ties and the baseline.
    function spreadText(c) {
      const b = c && c.best;
      if (!b) return '';
      if (b.samples > 1) return ' (median of ' + b.samples + ' re-measurements, ' + num(b.min) + ' to ' + num(b.max) + '; first draw ' + num(b.first_draw) + ')';
      if (b.samples === 1) return ' (one re-measurement; first draw ' + num(b.first_draw) + ')';
      return ' (one draw, not re-measured)';
    }
    function verdictText(c) {
      const v = c && c.baseline && c.baseline.verdict;
      if (v === 'within_noise') return ' (no candidate beat it beyond noise)';
      if (v === 'not_better') return ' (no candidate beat it)';
      return '';
    }
    function tiesText(c) {
      if (!c || !c.ties || !c.ties.length) return '';
      return 'tied within noise: ' + c.ties.map((t) => short(t.candidate) + ' ' + num(t.value)).join(', ');
    }

    function renderHead() {
      const target = goal.target !== null && goal.target !== undefined ? num(goal.target) : 'none';
      fill(head,
        el('h1', {}, id + ' ', phaseBadge(row.phase)),
        el('div', { class: 'row muted' },
          el('span', { text: 'task ' + (row.task || '–') }),
          el('span', { id: 'best', text: 'best ' + (goal.metric || 'score') + ' ' + num(row.best_score) + spreadText(row.confirmation) + (row.best_candidate ? ' (' + short(row.best_candidate) + ')' : '') }),
          el('span', { text: 'target ' + target }),
          el('span', { text: 'baseline ' + num(row.baseline_score) + verdictText(row.confirmation) }),
          tiesText(row.confirmation) ? el('span', { text: tiesText(row.confirmation) }) : null,
          el('span', { text: 'evaluations ' + row.evaluations }),
          el('span', { text: 'events ' + row.events }),
          el('span', { class: 'age', text: 'last event ' + (row.last_event.type || '–') + ', ' + age(ageOf(row)) + (REPORT ? ' (when the report was written)' : '') }),
          REPORT ? el('span', { text: 'report generated ' + REPORT.generated_at }) : null));
    }

    function post(path, body, msgEl) {
      msgEl.className = 'msg';
      msgEl.textContent = 'sending…';
      return api('/api/runs/' + encodeURIComponent(id) + path, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
      }).then((r) => {
        msgEl.className = 'msg okay';
        msgEl.textContent = 'done (event ' + r.seq + ')' + (r.compacted_now ? ': ' + r.outcome : '');
      }).catch((e) => {
        msgEl.className = 'msg err';
        msgEl.textContent = e.message;
      });
    }

    const goalText = el('textarea', { id: 'goal-text', 'aria-label': 'new objective' });
    const controlMsg = el('div', { id: 'control-msg', class: 'msg' });
    const goalObjective = el('span', { id: 'goal-objective' });
    const goalStatus = el('span', { class: 'muted', id: 'goal-status' });
    const goalProgress = el('p', { class: 'muted', id: 'goal-progress' });
    const historySummary = el('summary');
    const historyList = el('ol', { id: 'goal-history', reversed: true });
    const stoppedNote = el('p', { class: 'muted' });
    // Built once (a live update must not take the text being typed or the focus away).
    fill(goalBox,
      el('h2', { text: 'Goal' }),
      el('p', {}, goalObjective, ' ', goalStatus),
      goalProgress,
      REPORT ? null : el('div', {},
        el('div', { class: 'row', style: 'margin:.5em 0' },
          el('button', { id: 'goal-pause', onclick: () => post('/goal', { verb: 'pause', text: 'paused from the dashboard' }, controlMsg), text: 'Pause' }),
          el('button', { id: 'goal-resume', onclick: () => post('/goal', { verb: 'resume' }, controlMsg), text: 'Resume goal' }),
          el('button', { id: 'compact', onclick: () => post('/compact', { now: row.phase === 'paused' || row.phase === 'finished' }, controlMsg), text: 'Compact now' })),
        goalText,
        el('div', { class: 'row', style: 'margin-top:.3em' },
          el('button', { id: 'goal-save', onclick: () => {
            const t = goalText.value.trim();
            if (t) post('/goal', { verb: 'edit', text: t }, controlMsg);
          }, text: 'Edit goal' }),
          controlMsg),
        stoppedNote),
      el('details', { open: true }, historySummary, historyList));
    function renderGoal() {
      goalObjective.textContent = goal.objective || '(none)';
      goalStatus.textContent = '[' + goal.status + ']';
      goalProgress.textContent = goal.progress || '';
      historySummary.textContent = 'history (' + goalHistory.length + ')';
      fill(historyList, ...goalHistory.slice().reverse().map((g) =>
        el('li', { 'data-seq': g.seq },
          el('b', { text: g.verb }), ' ',
          el('span', { text: g.objective || '(no objective)' }),
          el('span', { class: 'muted', text: ' [' + g.status + ']' + (g.progress ? ' — ' + g.progress : '') + ' · event ' + g.seq }))));
      stoppedNote.textContent = row.phase === 'running' ? ''
        : row.phase === 'finished' ? 'The run has finished: its goal can no longer be changed (`marathon fork` starts a new run from any event).'
          : 'The run is ' + row.phase + ': `marathon resume` carries on after a change.';
      // A finished run takes no goal verb: the buttons that would only be refused are disabled.
      for (const bid of ['goal-pause', 'goal-resume', 'goal-save']) {
        const b = goalBox.querySelector('#' + bid);
        if (b) {
          b.disabled = row.phase === 'finished';
          b.title = b.disabled ? 'the run has finished' : '';
        }
      }
    }

    function renderBudget() {
      fill(gaugeBox, el('h2', { text: 'Budget' }), gauges(budget), executorView(executor));
    }

    function renderLedger() {
      fill(ledgerBox, el('h2', { text: 'Ledger' }),
        notes.length ? el('ul', { id: 'notes' }, notes.map((n) => el('li', {}, el('b', { text: n.kind + ' ' }), n.text, el('span', { class: 'muted', text: ' · event ' + n.seq }))))
          : el('p', { class: 'muted', text: 'no notes' }),
        el('h2', { text: 'Installed summary' }),
        summary ? el('pre', { class: 'scroll', id: 'summary', text: summary }) : el('p', { class: 'muted', text: 'no compaction yet' }));
    }

    function figures(f) {
      const parts = [];
      for (const [k, v] of Object.entries(f || {})) {
        if (parts.length >= 6) break;
        if (typeof v === 'number') parts.push(k + ' ' + num(v));
        else if (typeof v === 'string' && v.length < 40) parts.push(k + ' ' + v);
      }
      return parts.join(', ');
    }

    function showCandidate(hash) {
      candidateBox.hidden = false;
      fill(candidateBox, el('p', { class: 'muted', text: 'Loading candidate ' + short(hash) + '…' }));
      candidateBox.scrollIntoView();
      api('/api/runs/' + encodeURIComponent(id) + '/candidates/' + hash)
        .then((c) => fill(candidateBox, candidateView(c, 'Candidate')))
        .catch((e) => fill(candidateBox, el('div', { class: 'notice', text: e.message })));
    }

    function attemptRow(e, n) {
      const link = REPORT
        ? el('code', { text: short(e.candidate) })
        : el('button', { class: 'link', text: short(e.candidate), onclick: () => showCandidate(e.candidate) });
      return el('tr', { 'data-seq': e.seq },
        el('td', { class: 'num', text: String(n) }),
        el('td', { text: e.strategy || '' }),
        el('td', { class: 'kind-' + e.kind, text: KIND_STYLE[e.kind].label + (e.cached ? ' (cached)' : '') }),
        el('td', { class: 'num', text: num(e.score) }),
        el('td', { class: 'figures', text: figures(e.figures) + (e.failure ? (figures(e.figures) ? '; ' : '') + e.failure : '') }),
        el('td', {}, e.profile ? el('details', {}, el('summary', { text: 'profile' }), el('pre', { text: e.profile })) : ''),
        el('td', {}, link));
    }

    function renderAttempts() {
      const table = el('table', { id: 'attempts' },
        el('thead', {}, el('tr', {}, ['#', 'strategy', 'result', 'score', 'key metrics', 'profiler', 'candidate'].map((h) => el('th', { text: h })))),
        el('tbody', {}, evaluations.map((e, i) => attemptRow(e, i + 1)).reverse()));
      fill(attemptsBox, evaluations.length ? table : el('p', { class: 'muted', text: 'no evaluation yet' }));
    }

    // The event stream: the newest events, live, filtered by type (chips) and by text.
    const hidden = new Set();
    const filterInput = el('input', { type: 'text', id: 'event-filter', placeholder: 'filter: text in the type or the payload' });
    const chips = el('div', { class: 'chips' });
    const eventsTable = el('table', { id: 'events' });
    filterInput.addEventListener('input', () => renderEvents());
    function renderEvents() {
      const types = [...new Set(events.map((e) => e.type))].sort();
      fill(chips, ...types.map((t) => el('span', {
        class: 'chip' + (hidden.has(t) ? ' off' : ''), text: t,
        onclick: () => { if (hidden.has(t)) hidden.delete(t); else hidden.add(t); renderEvents(); },
      })));
      const q = filterInput.value.toLowerCase();
      const shown = events.filter((e) => !hidden.has(e.type) && (!q || e.type.includes(q) || e.text.toLowerCase().includes(q)));
      fill(eventsTable, el('tbody', {}, shown.slice(-500).reverse().map((e) =>
        el('tr', { 'data-seq': e.seq }, el('td', { class: 'num', text: String(e.seq) }), el('td', { text: e.at.slice(11, 19) }),
          el('td', { text: e.type }), el('td', { class: 'text', text: e.text })))));
    }
    fill(eventsBox, el('h2', { text: 'Events' }), filterInput, chips, el('div', { class: 'events' }, eventsTable));

    function redraw(series) {
      renderHead();
      renderGoal();
      renderBudget();
      renderLedger();
      if (!series) return;
      renderAttempts();
      fillChart(callsChart, evaluations, markers, row.baseline_score, goal.direction);
      fillChart(wallChart, evaluations, markers, row.baseline_score, goal.direction);
    }
    redraw(true);

    if (REPORT) {
      events = REPORT.events || [];
      renderEvents();
      if (REPORT.best) {
        candidateBox.hidden = false;
        fill(candidateBox, candidateView(REPORT.best, 'Best candidate'));
      }
      return;
    }

    function applyUpdate(u) {
      row = u.row;
      goal = u.goal;
      budget = u.budget;
      executor = u.executor;
      summary = u.summary;
      for (const e of u.evaluations) {
        const i = evaluations.findIndex((x) => x.seq === e.seq);
        if (i >= 0) evaluations[i] = e;
        else evaluations.push(e);
      }
      evaluations.sort((a, b) => a.seq - b.seq);
      markers = markers.concat(u.markers.filter((m) => m.seq > lastSeq));
      goalHistory = goalHistory.concat(u.goal_history.filter((g) => g.seq > lastSeq));
      notes = notes.concat(u.notes.filter((n) => n.seq > lastSeq));
      const known = events.length ? events[events.length - 1].seq : 0;
      events = events.concat(u.events.filter((e) => e.seq > known)).slice(-2000);
      lastSeq = Math.max(lastSeq, u.last_seq);
      redraw(u.evaluations.length > 0 || u.markers.length > 0);
      renderEvents();
    }

    api('/api/runs/' + encodeURIComponent(id) + '/events?limit=300').then((r) => {
      const known = events.length ? events[0].seq : Infinity;
      events = r.events.filter((e) => e.seq < known).concat(events);
      renderEvents();
    }).catch(() => {});
    const es = stream('/api/runs/' + encodeURIComponent(id) + '/stream?after=' + lastSeq);
    es.addEventListener('update', (ev) => { setConn('live', 'live'); applyUpdate(JSON.parse(ev.data)); });
    es.addEventListener('failure', (ev) => setConn('down', JSON.parse(ev.data).error));
    es.onerror = () => setConn('down', 'reconnecting…');
    const tick = setInterval(() => {
      const a = head.querySelector('.age');
      if (a) a.textContent = 'last event ' + (row.last_event.type || '–') + ', ' + age(ageOf(row));
    }, 1000);
    cleanup.push(() => { es.close(); clearInterval(tick); callsChart.destroy(); wallChart.destroy(); });
  }

  // ---- routing
  function route() {
    leaveView();
    if (REPORT) {
      $('#home').removeAttribute('href');
      setConn('', 'report (no server)');
      runView(REPORT.run.row.id);
      return;
    }
    const m = /^#run=(.+)$/.exec(location.hash);
    if (m) runView(decodeURIComponent(m[1]));
    else runsView();
  }
  window.addEventListener('hashchange', route);
  route();
})();
