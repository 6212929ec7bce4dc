// conform's HTML report: draws the JSON report the page carries. Every element is built with
// createElement and textContent: nothing from the report is ever parsed as markup.
'use strict';
(function () {
  const report = JSON.parse(document.getElementById('report-data').textContent);
  const cases = report.cases || [];
  const body = document.body;

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'dataset') Object.assign(e.dataset, v);
      else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // A case's family: the folder under its provider's, or `isolation` / `peers` whole.
  function family(id) {
    const parts = id.split('/');
    return parts[0] === 'isolation' || parts[0] === 'peers' ? parts[0] : (parts[1] || parts[0]);
  }
  const VERDICTS = ['pass', 'fail', 'known', 'skip', 'interrupted'];
  const MARK = { pass: '', fail: '✗', known: '~', skip: '−', interrupted: '!' };

  // ---- the header: what was judged, against what, how strictly
  function header() {
    body.append(el('h1', {}, 'conform report'));
    const dl = el('dl', { class: 'head' });
    const row = (k, v) => { if (v !== undefined && v !== null && v !== '') dl.append(el('dt', {}, k), el('dd', {}, v)); };
    row('subject', report.subject);
    row('fakes speak', Object.values(report.fakesSpeak || {}).join('; '));
    row('real peers', Object.entries(report.realPeers || {}).map(([n, p]) => `${n} ${p.version || ''}`).join('; '));
    row('conform', report.conformVersion);
    row('catalog', report.catalog);
    row('generated', report.generatedAt);
    row('duration', seconds(report.elapsedMs));
    row('jobs', report.jobs);
    row('strictness', report.strictness);
    row('partition', report.partition);
    row('shards', (report.shards || []).map(shard).join('; '));
    row('exit code', report.exitCode);
    row('interrupted by', report.interruptedBy);
    row('nothing tested', report.nothingTested);
    body.append(dl);
    const totals = el('p', { class: 'totals', id: 'totals' });
    for (const v of VERDICTS) {
      const n = cases.filter((c) => c.verdict === v).length;
      if (n || v === 'pass' || v === 'fail') totals.append(el('span', { class: v, dataset: { verdict: v, count: n } }, `${n} ${v}`));
    }
    body.append(totals);
  }
  function seconds(ms) { return ms !== undefined && ms !== null ? `${(ms / 1000).toFixed(1)} s` : undefined; }
  function shard(s) {
    const facts = [`exit ${s.exitCode}`, seconds(s.elapsedMs), s.catalog && `catalog ${s.catalog}`].filter(Boolean);
    return `${s.partition} (${s.file}): ${facts.join(', ')}`;
  }

  // ---- the failures grouped by cause, largest first: each with its count, providers and
  // families, its findings' patterns, and a link (`#cause=N`) that lists its cases
  const causeList = report.causes || [];
  function causes() {
    if (!causeList.length) return;
    body.append(el('h2', { id: 'causes' }, `Causes of failure (${causeList.length})`));
    const ol = el('ol', { class: 'causes', id: 'cause-list' });
    causeList.forEach((c, i) => {
      const li = el('li', { dataset: { cause: i + 1, runs: c.runs.length } },
        el('strong', {}, `${c.runs.length} run(s)`), ` · ${c.providers.join(', ')} · ${c.families.join(', ')}`);
      for (const p of c.patterns) li.append(el('div', { class: 'pattern' }, `[${p.check}] ${p.pattern}`));
      li.append(el('a', { href: `#cause=${i + 1}&status=fail` }, 'show its cases'));
      ol.append(li);
    });
    body.append(ol);
  }

  // ---- the matrix: family × provider (× mode, with the mode picked), each cell its counts; a
  // click lists the cell's cases
  function matrix() {
    body.append(el('h2', {}, 'Where the subject stands'));
    const modes = [...new Set(cases.map((c) => c.mode))];
    const pickMode = el('select', { id: 'matrix-mode', 'aria-label': 'mode' }, el('option', { value: '' }, 'both modes'), ...modes.map((m) => el('option', { value: m }, m)));
    const holder = el('div', { id: 'matrix-holder' });
    pickMode.addEventListener('change', () => { holder.replaceChildren(matrixTable(pickMode.value)); });
    body.append(el('p', {}, pickMode), holder);
    holder.append(matrixTable(''));
    body.append(el('p', { class: 'source' }, 'A cell: passed (⚠ with advisories), ✗ failed, ~ known from the baseline, − skipped, ! interrupted. Click to list its cases.'));
  }
  function matrixTable(mode) {
    const providers = [...new Set(cases.map((c) => c.provider))];
    const families = [...new Set(cases.map((c) => family(c.id)))]
      .sort((a, b) => (['isolation', 'peers'].includes(a) - ['isolation', 'peers'].includes(b)));
    const table = el('table', { class: 'matrix', id: 'matrix' });
    table.append(el('tr', {}, el('th', {}, 'family'), ...providers.map((p) => el('th', {}, p))));
    for (const f of families) {
      const tr = el('tr', {}, el('th', {}, f));
      for (const p of providers) {
        const here = cases.filter((c) => c.provider === p && family(c.id) === f && (!mode || c.mode === mode));
        const counts = Object.fromEntries(VERDICTS.map((v) => [v, here.filter((c) => c.verdict === v).length]));
        const advised = here.filter((c) => c.verdict === 'pass' && (c.advisories || []).length).length;
        const td = el('td', { class: 'cell', dataset: { provider: p, family: f, total: here.length, advisory: advised, ...counts } });
        if (here.length) {
          td.classList.add(counts.fail ? 'has-fail' : counts.pass === here.length ? 'all-pass' : counts.skip === here.length ? 'only-skip' : 'mixed');
          for (const v of VERDICTS) if (counts[v]) td.append(el('span', { class: v }, `${MARK[v]}${counts[v]} `));
          if (advised) td.append(el('span', { class: 'known' }, `⚠${advised}`));
          td.title = VERDICTS.filter((v) => counts[v]).map((v) => `${counts[v]} ${v}`).join(', ');
          td.addEventListener('click', () => { setFilters({ provider: p, family: f, mode }); document.getElementById('cases').scrollIntoView(); applyFromState(); });
        }
        tr.append(td);
      }
      table.append(tr);
    }
    return table;
  }

  // ---- a failure, opened: checks with requirement and source, the diff, the transcripts
  function diffBlock(text) {
    const pre = el('pre', { class: 'diff' });
    for (const line of text.split('\n')) {
      const cls = line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk' : null;
      pre.append(cls ? el('span', { class: cls }, line) : document.createTextNode(line + '\n'));
    }
    return pre;
  }
  // Long text folded: the first lines shown, the rest one click away.
  function folded(text, keep) {
    const lines = text.split('\n').map((l) => (l.length > 2000 ? `${l.slice(0, 2000)} … (+${l.length - 2000} characters)` : l));
    if (lines.length <= keep) return el('pre', {}, lines.join('\n'));
    const wrap = el('div', {}, el('pre', {}, lines.slice(0, keep).join('\n')));
    wrap.append(el('details', { class: 'fold' }, el('summary', {}, `${lines.length - keep} more line(s)`), el('pre', {}, lines.slice(keep).join('\n'))));
    return wrap;
  }
  function finding(f, advisory) {
    const box = el('div', { class: advisory ? 'finding advisory' : 'finding', dataset: { check: f.check } });
    box.append(el('strong', {}, `${advisory ? '⚠ ' : '✗ '}[${f.check}] `));
    const [first, ...rest] = String(f.message).split('\n');
    box.append(first);
    if (rest.length) {
      const text = rest.join('\n');
      box.append(/^[-+@ ]/m.test(text) && /^(---|\+\+\+|@@)/m.test(text) ? diffBlock(text) : folded(text, 40));
    }
    box.append(el('div', { class: 'source' }, `requirement (${f.level}): ${f.source}`));
    return box;
  }
  function opened(c) {
    const d = el('details', { class: 'failure' });
    d.append(el('summary', {}, `${c.title || c.id} — ${c.file || ''}`));
    for (const f of c.findings || []) d.append(finding(f, false));
    for (const f of c.advisories || []) d.append(finding(f, true));
    if (c.baselineReason) d.append(el('p', { class: 'known' }, `known: ${c.baselineReason}`));
    // The page's data keeps of the human block what the checks above do not tell.
    if (c.detail) { d.append(el('h4', {}, 'runtime, subject transcript, runtime ledger, stderr')); d.append(folded(c.detail, 80)); }
    else if (c.ledger && c.ledger.length) { d.append(el('h4', {}, 'runtime ledger')); d.append(folded(c.ledger.join('\n'), 60)); }
    if (c.modelVisible) { d.append(el('h4', {}, 'model-visible texts')); d.append(folded(c.modelVisible, 40)); }
    if (c.settle) { d.append(el('h4', {}, 'settling')); d.append(folded(JSON.stringify(c.settle, null, 2), 30)); }
    if (c.delivery) { d.append(el('h4', {}, 'background delivery')); d.append(folded(JSON.stringify(c.delivery, null, 2), 30)); }
    return d;
  }

  // ---- the cases, filterable by provider, family, status and text
  const state = { provider: '', family: '', mode: '', status: '', q: '', cause: '' };
  function setFilters(s) { Object.assign(state, { provider: '', family: '', mode: '', status: '', q: '', cause: '' }, s); }
  // A cause's runs, as `id mode` keys.
  function causeRuns(n) {
    const c = causeList[Number(n) - 1];
    return c ? new Set(c.runs.map((r) => `${r.id} ${r.mode}`)) : new Set();
  }
  let rows = [];
  function caseList() {
    body.append(el('h2', { id: 'cases' }, 'Cases'));
    const pick = (name, values) => {
      const s = el('select', { id: `filter-${name}`, 'aria-label': name }, el('option', { value: '' }, `every ${name}`), ...values.map((v) => el('option', { value: v }, v)));
      s.addEventListener('change', () => { state[name] = s.value; applyToRows(); writeHash(); });
      return s;
    };
    const q = el('input', { type: 'search', id: 'filter-q', placeholder: 'text in id, title, check, message…' });
    q.addEventListener('input', () => { state.q = q.value; applyToRows(); writeHash(); });
    const shown = el('span', { id: 'shown' });
    body.append(el('div', { class: 'filters' },
      pick('provider', [...new Set(cases.map((c) => c.provider))]),
      pick('family', [...new Set(cases.map((c) => family(c.id)))]),
      pick('mode', [...new Set(cases.map((c) => c.mode))]),
      pick('status', VERDICTS), q, shown));
    const table = el('table', { class: 'cases', id: 'case-table' });
    table.append(el('tr', {}, ...['case', 'mode', 'provider', 'result', 'first failed check', 'ms'].map((h) => el('th', {}, h))));
    for (const c of cases) {
      const first = (c.findings || [])[0];
      const main = el('td', {}, c.id);
      if (c.verdict === 'fail' || c.verdict === 'known' || (c.advisories || []).length) main.append(opened(c));
      else if (c.skipReason) main.append(el('div', { class: 'source' }, c.skipReason));
      if (c.rerunAlone) main.append(el('div', { class: 'source' }, `run again alone: ${c.rerunAlone}`));
      const tr = el('tr', { class: 'case', dataset: { provider: c.provider, family: family(c.id), mode: c.mode, verdict: c.verdict, run: `${c.id} ${c.mode}` } },
        main, el('td', {}, c.mode), el('td', {}, c.provider), el('td', { class: `verdict ${c.verdict}` }, c.verdict),
        el('td', {}, first ? first.check : ''), el('td', {}, c.elapsedMs ?? ''));
      tr.searchText = [c.id, c.title, c.file, c.skipReason, ...(c.findings || []).flatMap((f) => [f.check, f.message])].join('\n').toLowerCase();
      rows.push(tr);
      table.append(tr);
    }
    body.append(table);
  }
  function applyToRows() {
    let n = 0;
    const inCause = state.cause ? causeRuns(state.cause) : null;
    for (const tr of rows) {
      const d = tr.dataset;
      const show = (!state.provider || d.provider === state.provider) && (!state.family || d.family === state.family)
        && (!state.mode || d.mode === state.mode) && (!inCause || inCause.has(d.run))
        && (!state.status || d.verdict === state.status) && (!state.q || tr.searchText.includes(state.q.toLowerCase()));
      tr.hidden = !show;
      if (show) n++;
    }
    const shown = document.getElementById('shown');
    shown.textContent = `${n} of ${rows.length} case(s)`;
    shown.dataset.count = n;
  }
  function applyFromState() {
    for (const k of ['provider', 'family', 'mode', 'status']) {
      const select = document.getElementById(`filter-${k}`);
      // A value from the address that no case has is shown as such, not as "every …".
      if (state[k] && ![...select.options].some((o) => o.value === state[k])) {
        select.append(el('option', { value: state[k], dataset: { unknown: 'yes' } }, `${state[k]} (no such ${k}: matches nothing)`));
      }
      select.value = state[k];
    }
    document.getElementById('filter-q').value = state.q;
    applyToRows();
    writeHash();
  }
  // The filters live in the address (`#status=fail&provider=acp`): a view can be linked.
  function writeHash() {
    const p = new URLSearchParams(Object.entries(state).filter(([, v]) => v));
    const h = p.toString();
    if (h !== location.hash.slice(1)) history.replaceState(null, '', h ? `#${h}` : location.pathname);
  }
  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    setFilters(Object.fromEntries([...p.entries()].filter(([k]) => k in state)));
  }

  // ---- requirements: every check with what it requires and from where, and the cases where
  // it failed (or was an advisory); the checks that failed first
  function requirements() {
    body.append(el('h2', { id: 'requirements' }, 'Requirements'));
    const by = new Map();
    for (const k of report.checks || []) by.set(k.id, { level: k.level, source: k.source, requirement: k.requirement, cases: [] });
    for (const c of cases) {
      for (const [f, advisory] of [...(c.findings || []).map((f) => [f, false]), ...(c.advisories || []).map((f) => [f, true])]) {
        if (!by.has(f.check)) by.set(f.check, { level: f.level, source: f.source, cases: [] });
        by.get(f.check).cases.push(`${c.id} (${c.mode}) ${advisory ? 'advisory' : c.verdict}`);
      }
    }
    for (const f of report.findings || []) {
      if (!by.has(f.check)) by.set(f.check, { level: f.level, source: f.source, cases: [] });
      by.get(f.check).cases.push('the suite');
    }
    const judged = cases.filter((c) => c.verdict !== 'skip' && c.verdict !== 'interrupted').length;
    const table = el('table', { id: 'requirement-table' }, el('tr', {}, ...['check', 'requirement', 'from', 'where it failed'].map((h) => el('th', {}, h))));
    const entries = [...by.entries()].sort((a, b) => (b[1].cases.length > 0) - (a[1].cases.length > 0) || a[0].localeCompare(b[0]));
    for (const [check, r] of entries) {
      const failed = [...new Set(r.cases)];
      table.append(el('tr', { dataset: { check, failed: failed.length } }, el('td', {}, check), el('td', {}, r.requirement || ''),
        el('td', { class: 'source' }, `${r.level}: ${r.source || ''}`),
        failed.length ? el('td', { class: 'fail' }, folded(failed.join('\n'), 12)) : el('td', { class: 'pass' }, `no failure in ${judged} judged case(s)`)));
    }
    body.append(table);
  }

  // ---- against the baseline: known, stale (fixed since, or changed), not run
  function baseline() {
    const b = report.baseline;
    if (!b) return;
    body.append(el('h2', { id: 'baseline' }, `Against the baseline ${b.file}`));
    const fresh = cases.filter((c) => c.verdict === 'fail').length;
    body.append(el('p', {}, `${fresh} new failure(s); ${b.entries.filter((e) => e.status === 'matched').length} known; ${b.entries.filter((e) => e.status === 'stale').length} stale (fixed since, or failing otherwise); ${b.entries.filter((e) => e.status === 'not-run').length} not run here.`));
    if (b.catalogWarning) body.append(el('p', { class: 'known' }, b.catalogWarning));
    const table = el('table', {}, el('tr', {}, ...['entry', 'status', 'why'].map((h) => el('th', {}, h))));
    for (const e of b.entries) table.append(el('tr', {}, el('td', {}, `${e.id} (line ${e.line})`), el('td', {}, e.status), el('td', {}, e.why || e.reason || '')));
    body.append(table);
  }

  // ---- what the suite itself found
  function suite() {
    const f = report.findings || [];
    if (!f.length && !(report.stragglers || []).length) return;
    body.append(el('h2', {}, 'The suite'));
    for (const x of f) body.append(finding(x, false));
    if ((report.stragglers || []).length) body.append(el('p', {}, `processes left behind (killed): ${report.stragglers.join(', ')}`));
  }

  header();
  causes();
  matrix();
  suite();
  baseline();
  requirements();
  caseList();
  readHash();
  applyFromState();
  // A link to `#cause=3`, or an address edited by hand, filters the page already open.
  window.addEventListener('hashchange', () => { readHash(); applyFromState(); });
  document.documentElement.dataset.ready = 'yes';
})();
