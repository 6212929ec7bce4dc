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

  // A run's address on the page: `#case=<id>@<mode>`.
  const runKey = (id, mode) => `${id}@${mode}`;
  const caseHref = (id, mode) => `#${new URLSearchParams({ case: runKey(id, mode) })}`;

  // Lines a subject wrote can be a megabyte long: each is shown up to LINE_MAX characters, the
  // rest counted (the JSON report keeps them whole).
  const LINE_MAX = 2000;
  function clip(text) {
    return String(text).split('\n')
      .map((l) => (l.length > LINE_MAX ? `${l.slice(0, LINE_MAX)} … (+${l.length - LINE_MAX} characters)` : l))
      .join('\n');
  }

  // A scrolling box of its own: a wide table scrolls there, never the page.
  const scrollBox = (child) => el('div', { class: 'scroll' }, child);

  // ---- the header: what was judged, against what, how strictly
  function header() {
    body.append(el('h1', {}, 'conform report'));
    const dl = el('dl', { class: 'head' });
    const row = (k, v) => { if (v !== undefined && v !== null && v !== '') dl.append(el('dt', {}, k), el('dd', {}, clip(v))); };
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

  // ---- since the previous run (`--compare`): new failures, fixed runs, causes new, grown,
  // shrunk or gone, each run linking to its case (`#case=<id>@<mode>`); with several reports a
  // small history, one row per report, oldest first
  function sincePrevious() {
    const cmp = report.comparedWith;
    const past = report.history || [];
    if (!cmp && !past.length) return;
    const section = el('section', { id: 'since-previous', class: 'since' });
    section.append(el('h2', {}, cmp ? `Since the previous run (${cmp.file || 'a previous report'})` : 'History'));
    if (past.length) {
      const table = el('table', { id: 'history' }, el('tr', {}, ...['report', 'written', 'passed', 'failed', 'known', 'skipped'].map((h) => el('th', {}, h))));
      for (const r of past) {
        const n = r.counts || {};
        table.append(el('tr', { dataset: { failed: n.failed } }, el('td', {}, r.file), el('td', {}, r.generatedAt || ''),
          el('td', { class: 'pass' }, n.passed), el('td', { class: 'fail' }, n.failed), el('td', { class: 'known' }, n.known), el('td', { class: 'skip' }, n.skipped)));
      }
      section.append(table);
    }
    if (cmp) {
      for (const note of cmp.notes || []) section.append(el('p', { class: 'known note' }, `note: ${note}`));
      const said = { pass: 'passed before', fail: 'failed before', known: 'known before', skip: 'skipped before', interrupted: 'interrupted before', absent: 'not in the previous report' };
      const part = (s) => encodeURIComponent(s).replace(/%2F/g, '/');
      const link = (r) => el('a', { href: `#case=${part(r.id)}@${part(r.mode)}` }, `${r.id} (${r.mode})`);
      const runs = (id, title, list, why) => {
        if (!list || !list.length) return;
        const ul = el('ul', { id, class: 'since-runs' });
        for (const r of list) ul.append(el('li', {}, link(r), ` — ${why(r)}`));
        section.append(el('h3', {}, `${title} (${list.length})`), ul);
      };
      section.append(el('p', { id: 'since-counts' }, `${(cmp.newFailures || []).length} new failure(s), ${(cmp.fixed || []).length} fixed, ${(cmp.stillFailing || []).length} still failing, ${(cmp.notRunNow || []).length} no longer run`));
      runs('since-new', 'New failures', cmp.newFailures, (r) => said[r.before] || r.before);
      runs('since-fixed', 'Fixed', cmp.fixed, (r) => said[r.before] || r.before);
      const moved = [];
      for (const kind of ['new', 'grew', 'shrank', 'gone']) for (const c of (cmp.causes || {})[kind] || []) moved.push([kind, c]);
      moved.sort((a, b) => Math.abs(b[1].after - b[1].before) - Math.abs(a[1].after - a[1].before));
      if (moved.length) {
        const ol = el('ul', { id: 'since-causes', class: 'causes' });
        for (const [kind, c] of moved) {
          const li = el('li', { dataset: { change: kind } }, el('strong', { class: kind === 'new' || kind === 'grew' ? 'fail' : 'pass' }, `${kind} ${c.before} → ${c.after} run(s)`));
          for (const p of c.patterns) li.append(el('div', { class: 'pattern' }, `[${p.check}] ${p.pattern}`));
          li.append(el('div', {}, ...c.runs.slice(0, 10).flatMap((r, i) => [i ? ', ' : '', link(r)]), c.runs.length > 10 ? ` and ${c.runs.length - 10} more` : ''));
          ol.append(li);
        }
        section.append(el('h3', {}, `Causes that changed (${moved.length})`), ol);
      }
      runs('since-not-run', 'No longer run', cmp.notRunNow, (r) => `${said[r.before] || r.before}; ${r.now === 'absent' ? 'not in this report' : `${r.now} now`}`);
    }
    body.append(section);
  }

  // ---- the failures grouped by cause, largest first: each with its count, providers and
  // families and its findings' patterns, opening to its runs (each a link to its failure) and
  // a link (`#cause=N`) that lists only its cases
  const causeList = report.causes || [];
  function causes() {
    if (!causeList.length) return;
    body.append(el('h2', { id: 'causes' }, `Causes of failure (${causeList.length})`));
    const ol = el('ol', { class: 'causes', id: 'cause-list' });
    causeList.forEach((c, i) => ol.append(cause(c, i + 1)));
    body.append(ol);
  }
  function cause(c, n) {
    const summary = el('summary', {}, el('strong', {}, `${c.runs.length} run(s)`), ` · ${c.providers.join(', ')} · ${c.families.join(', ')}`);
    for (const p of c.patterns) summary.append(el('span', { class: 'pattern' }, clip(`[${p.check}] ${p.pattern}`)));
    const runs = el('ul', { class: 'runs' }, ...c.runs.map((r) => el('li', {}, el('a', { href: caseHref(r.id, r.mode) }, `${r.id} (${r.mode})`))));
    const only = el('a', { href: `#${new URLSearchParams({ cause: n, status: 'fail' })}` }, 'list only these cases below');
    return el('li', { dataset: { cause: n, runs: c.runs.length } }, el('details', { class: 'cause' }, summary, el('p', {}, only), runs));
  }

  // ---- the matrix: family × provider (× mode, with the mode picked), each cell its counts, a
  // button that lists the cell's cases (by click, or Enter from the keyboard)
  function matrix() {
    body.append(el('h2', { id: 'matrix-title' }, 'Where the subject stands'));
    const modes = [...new Set(cases.map((c) => c.mode))];
    const pickMode = el('select', { id: 'matrix-mode', 'aria-label': 'the matrix counts' }, el('option', { value: '' }, 'both modes'), ...modes.map((m) => el('option', { value: m }, m)));
    const holder = el('div', { id: 'matrix-holder', class: 'scroll' });
    pickMode.addEventListener('change', () => { holder.replaceChildren(matrixTable(pickMode.value)); });
    body.append(el('p', {}, pickMode), holder);
    holder.append(matrixTable(''));
    body.append(el('p', { class: 'source' }, 'A cell: passed (⚠ with advisories), ✗ failed, ~ known from the baseline, − skipped, ! interrupted. Click it, or Enter on it, to list its cases.'));
  }
  function matrixTable(mode) {
    const providers = [...new Set(cases.map((c) => c.provider))];
    const families = [...new Set(cases.map((c) => family(c.id)))]
      .sort((a, b) => (['isolation', 'peers'].includes(a) - ['isolation', 'peers'].includes(b)));
    const table = el('table', { class: 'matrix', id: 'matrix' });
    table.append(el('tr', {}, el('th', { scope: 'col' }, 'family'), ...providers.map((p) => el('th', { scope: 'col' }, p))));
    for (const f of families) {
      const tr = el('tr', {}, el('th', { scope: 'row' }, f));
      for (const p of providers) tr.append(matrixCell(p, f, mode));
      table.append(tr);
    }
    return table;
  }
  function matrixCell(p, f, mode) {
    const here = cases.filter((c) => c.provider === p && family(c.id) === f && (!mode || c.mode === mode));
    const counts = Object.fromEntries(VERDICTS.map((v) => [v, here.filter((c) => c.verdict === v).length]));
    const advised = here.filter((c) => c.verdict === 'pass' && (c.advisories || []).length).length;
    const td = el('td', { class: 'cell', dataset: { provider: p, family: f, total: here.length, advisory: advised, ...counts } });
    if (!here.length) return td;
    td.classList.add(counts.fail ? 'has-fail' : counts.pass === here.length ? 'all-pass' : counts.skip === here.length ? 'only-skip' : 'mixed');
    const said = VERDICTS.filter((v) => counts[v]).map((v) => `${counts[v]} ${v}`).join(', ');
    const button = el('button', { type: 'button', class: 'cell-button', 'aria-label': `${f} on ${p}${mode ? ` (${mode})` : ''}: ${said}; list these cases` });
    for (const v of VERDICTS) if (counts[v]) button.append(el('span', { class: v }, `${MARK[v]}${counts[v]} `));
    if (advised) button.append(el('span', { class: 'known' }, `⚠${advised}`));
    button.title = said;
    button.addEventListener('click', () => { setFilters({ provider: p, family: f, mode }); applyFromState(); document.getElementById('cases').scrollIntoView(); });
    td.append(button);
    return td;
  }

  // ---- a failure, opened: each check once (a diff drawn as a diff), with its requirement and
  // source; then the runtime, the transcripts, the model-visible texts and the timelines
  function diffBlock(text) {
    const pre = el('pre', { class: 'diff' });
    for (const line of clip(text).split('\n')) {
      const cls = line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk' : null;
      pre.append(cls ? el('span', { class: cls }, line) : document.createTextNode(line + '\n'));
    }
    return pre;
  }
  // Long text folded: the first lines shown, the rest one click away.
  function folded(text, keep) {
    const lines = clip(text).split('\n');
    if (lines.length <= keep) return el('pre', {}, lines.join('\n'));
    const wrap = el('div', {}, el('pre', {}, lines.slice(0, keep).join('\n')));
    wrap.append(el('details', { class: 'fold' }, el('summary', {}, `${lines.length - keep} more line(s)`), el('pre', {}, lines.slice(keep).join('\n'))));
    return wrap;
  }
  function finding(f, advisory) {
    const box = el('div', { class: advisory ? 'finding advisory' : 'finding', dataset: { check: f.check } });
    box.append(el('strong', {}, `${advisory ? '⚠ ' : '✗ '}[${f.check}] `));
    const [first, ...rest] = String(f.message).split('\n');
    box.append(clip(first));
    if (rest.length) {
      const text = rest.join('\n');
      box.append(/^[-+@ ]/m.test(text) && /^(---|\+\+\+|@@)/m.test(text) ? diffBlock(text) : folded(text, 40));
    }
    box.append(el('div', { class: 'source' }, `requirement (${f.level}): ${f.source}`));
    return box;
  }
  // A case the page draws opened: failed, known, or passed with advisories.
  const opens = (c) => c.verdict === 'fail' || c.verdict === 'known' || (c.advisories || []).length > 0;
  function opened(c) {
    const d = el('details', { class: 'failure', dataset: { run: runKey(c.id, c.mode) } });
    d.append(el('summary', {}, clip(`${c.title || c.id} — ${c.file || ''}`)));
    for (const f of c.findings || []) d.append(finding(f, false));
    for (const f of c.advisories || []) d.append(finding(f, true));
    if (c.baselineReason) d.append(el('p', { class: 'known' }, `known: ${c.baselineReason}`));
    // The page's data keeps of the human block what the checks above do not tell.
    if (c.detail) { d.append(el('h4', {}, 'runtime, subject transcript, runtime ledger, stderr')); d.append(folded(c.detail, 80)); }
    else if (c.ledger && c.ledger.length) { d.append(el('h4', {}, 'runtime ledger')); d.append(folded(c.ledger.join('\n'), 60)); }
    if (c.modelVisible) { d.append(el('h4', {}, 'model-visible texts')); d.append(folded(c.modelVisible, 40)); }
    if (c.settle) { d.append(el('h4', {}, 'settling')); d.append(settling(c.settle)); }
    if (c.delivery) { d.append(el('h4', {}, 'background delivery')); d.append(delivery(c.delivery)); }
    // An opened failure is a view that can be linked: its address names it.
    d.addEventListener('toggle', () => {
      const key = runKey(c.id, c.mode);
      if (d.open) state.case = key;
      else if (state.case === key) state.case = '';
      writeHash();
    });
    return d;
  }

  // ---- when things happened in a run: events in order, each at its milliseconds since the
  // run began with a bar that long (the last event's bar is full), then what has no time
  function timeline(events, notes) {
    const timed = events.filter((e) => Number.isFinite(e.at)).sort((a, b) => a.at - b.at);
    const end = Math.max(1, ...timed.map((e) => e.at));
    const ol = el('ol', { class: 'timeline' });
    for (const e of timed) {
      const bar = el('span', { class: 'bar' });
      bar.style.width = `${Math.max(0, (e.at / end) * 100)}%`;
      ol.append(el('li', { dataset: { at: e.at } }, el('span', { class: 'at' }, `${e.at} ms`), el('span', { class: 'track' }, bar), el('span', { class: 'what' }, clip(e.what)), e.more || null));
    }
    const untimed = [...events.filter((e) => !Number.isFinite(e.at)).map((e) => e.what), ...notes];
    const ul = untimed.length ? el('ul', { class: 'timeline-notes' }, ...untimed.map((n) => el('li', {}, clip(n)))) : null;
    return el('div', { class: 'timeline-box' }, ol, ul);
  }
  // Settling: each process gone, the subject's claim (with the tree as it stood then), its last
  // message; what was never registered, and what was left over.
  function settling(s) {
    const commandOf = new Map([...((s.claim && s.claim.members) || []), ...(s.unregistered || [])].map((m) => [m.pid, m.command]));
    const events = (s.exits || []).map((x) => ({
      at: x.goneAtMs,
      what: `pid ${x.pid} gone${commandOf.has(x.pid) ? ` (${commandOf.get(x.pid)})` : ''}${x.goneAtMs === s.lastExitAtMs ? ', the last' : ''}`,
    }));
    if (s.claim) events.push({ at: s.claim.atMs, what: `the subject says "${s.claim.what}"`, more: claimTree(s.claim) });
    if (s.lastSubjectMessageAtMs !== null && s.lastSubjectMessageAtMs !== undefined) events.push({ at: s.lastSubjectMessageAtMs, what: "the subject's last message" });
    const notes = [];
    const after = s.claimAfterLastExitMs;
    if (after !== null && after !== undefined) notes.push(`the claim came ${Math.abs(after)} ms ${after < 0 ? 'before' : 'after'} the last process was gone`);
    if ((s.exits || []).length && (s.lastExitAtMs === null || s.lastExitAtMs === undefined)) notes.push('the end of some process was not seen');
    for (const m of s.unregistered || []) notes.push(`never registered by the subject: pid ${m.pid} (${m.how}) ${m.command}`);
    for (const l of s.leftovers || []) notes.push(`left over, killed by the harness: ${l}`);
    return timeline(events, notes);
  }
  function claimTree(claim) {
    const items = (claim.members || []).map((m) => `pid ${m.pid} (${m.command}; ${m.how}): ${m.state}${m.reaper ? `, to be reaped by ${m.reaper}` : ''}`);
    for (const h of claim.holders || []) items.push(`pid ${h.pid} (${h.command}) holds ${h.pipe}`);
    if (claim.cgroup) items.push(`cgroup ${claim.cgroup.dir}: ${claim.cgroup.populated ? 'populated' : 'empty'}${claim.cgroup.pids.length ? ` (pids ${claim.cgroup.pids.join(', ')})` : ''}`);
    return items.length ? el('ul', { class: 'claim' }, ...items.map((i) => el('li', {}, clip(i)))) : null;
  }
  // Background delivery: the watchdog's changes, the dispatch and completion receipts (their
  // wall-clock times placed on the run's clock through the watchdog's, which carry both).
  function delivery(d) {
    const changes = d.timeline || [];
    const events = changes.map((t) => ({ at: t.atMs, what: `watchdog: ${t.status} (${t.at})` }));
    const offset = changes.length ? Date.parse(changes[0].at) - changes[0].atMs : NaN;
    const place = (when) => Date.parse(when) - offset;
    if (d.dispatch) {
      events.push({ at: place(d.dispatch.dispatchAt), what: `dispatched: run ${d.dispatch.runId}, child session ${d.dispatch.childSessionKey} (${d.dispatch.dispatchAt})` });
      events.push({ at: place(d.dispatch.expectedBy), what: `expected by (${d.dispatch.expectedBy})` });
    }
    if (d.completion) {
      const forwarded = d.completion.forwardedToMain ? 'forwarded to the main conversation' : 'not forwarded';
      events.push({ at: place(d.completion.completionReceivedAt), what: `completion received from ${d.completion.resultSource}, ${forwarded} (${d.completion.completionReceivedAt})` });
    }
    const notes = [d.watchdog ? `the watchdog ended at ${d.watchdog}` : 'no watchdog change was seen'];
    return timeline(events.map((e) => ({ ...e, at: Number.isFinite(e.at) ? Math.round(e.at) : NaN })), notes);
  }

  // ---- the cases, failures first, filterable by provider, family, mode, status, cause and
  // text; one of them can be named by the address (`#case=<id>@<mode>`)
  const FILTERS = { provider: '', family: '', mode: '', status: '', q: '', cause: '', case: '' };
  const state = { ...FILTERS };
  function setFilters(s) { Object.assign(state, FILTERS, s); }
  // A cause's runs, as addresses.
  function causeRuns(n) {
    const c = causeList[Number(n) - 1];
    return c ? new Set(c.runs.map((r) => runKey(r.id, r.mode))) : new Set();
  }
  // Failures first, then known, interrupted, passed with advisories, passed, skipped.
  function rank(c) {
    const at = ['fail', 'known', 'interrupted'].indexOf(c.verdict);
    if (at >= 0) return at;
    if (c.verdict === 'pass') return (c.advisories || []).length ? 3 : 4;
    return 5;
  }
  let rows = [];
  const rowOf = new Map();
  function caseList() {
    body.append(el('h2', { id: 'cases' }, 'Cases, failures first'));
    const pick = (name, values) => {
      const s = el('select', { id: `filter-${name}`, 'aria-label': `filter by ${name}` }, el('option', { value: '' }, `every ${name}`), ...values.map((v) => el('option', { value: v }, v)));
      s.addEventListener('change', () => { state[name] = s.value; state.case = ''; applyToRows(); writeHash(); });
      return s;
    };
    const q = el('input', { type: 'search', id: 'filter-q', placeholder: 'text in id, title, check, message…' });
    q.addEventListener('input', () => { state.q = q.value; state.case = ''; applyToRows(); writeHash(); });
    const shown = el('span', { id: 'shown', 'aria-live': 'polite' });
    body.append(el('div', { class: 'filters' },
      pick('provider', [...new Set(cases.map((c) => c.provider))]),
      pick('family', [...new Set(cases.map((c) => family(c.id)))]),
      pick('mode', [...new Set(cases.map((c) => c.mode))]),
      pick('status', VERDICTS), el('label', { for: 'filter-q' }, 'Search cases'), q, shown));
    body.append(el('p', { id: 'case-missing', class: 'fail', hidden: '' }));
    const table = el('table', { class: 'cases', id: 'case-table' });
    table.append(el('tr', {}, ...['case', 'mode', 'provider', 'result', 'first failed check', 'time'].map((h) => el('th', { scope: 'col' }, h))));
    for (const c of [...cases].sort((a, b) => rank(a) - rank(b))) table.append(caseRow(c));
    body.append(scrollBox(table));
  }
  function caseRow(c) {
    const first = (c.findings || [])[0];
    const main = el('td', {}, c.id);
    if (opens(c)) main.append(opened(c));
    else if (c.skipReason) main.append(el('div', { class: 'source' }, clip(c.skipReason)));
    if (c.rerunAlone) main.append(el('div', { class: 'source' }, clip(`run again alone: ${c.rerunAlone}`)));
    const key = runKey(c.id, c.mode);
    const tr = el('tr', { class: 'case', dataset: { provider: c.provider, family: family(c.id), mode: c.mode, verdict: c.verdict, run: key } },
      main, el('td', {}, c.mode), el('td', {}, c.provider), el('td', { class: `verdict ${c.verdict}` }, c.verdict),
      el('td', {}, first ? first.check : ''), el('td', {}, c.elapsedMs !== null && c.elapsedMs !== undefined ? `${c.elapsedMs} ms` : ''));
    tr.searchText = [c.id, c.title, c.file, c.skipReason, ...(c.findings || []).flatMap((f) => [f.check, f.message])].join('\n').toLowerCase();
    rows.push(tr);
    rowOf.set(key, tr);
    return tr;
  }
  function applyToRows() {
    let n = 0;
    const inCause = state.cause ? causeRuns(state.cause) : null;
    for (const tr of rows) {
      const d = tr.dataset;
      // The case the address names is shown whatever the filters say.
      const show = d.run === state.case || ((!state.provider || d.provider === state.provider) && (!state.family || d.family === state.family)
        && (!state.mode || d.mode === state.mode) && (!inCause || inCause.has(d.run))
        && (!state.status || d.verdict === state.status) && (!state.q || tr.searchText.includes(state.q.toLowerCase())));
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
    revealCase();
    writeHash();
  }
  // The case the address names: its failure opened and scrolled into view, or a line saying
  // the report has no such case.
  function revealCase() {
    const missing = document.getElementById('case-missing');
    const tr = state.case ? rowOf.get(state.case) : null;
    missing.hidden = !state.case || !!tr;
    missing.textContent = missing.hidden ? '' : `No case ${state.case} in this report (the address names a case as <id>@<mode>).`;
    if (!tr) return;
    const details = tr.querySelector('details.failure');
    if (details) details.open = true;
    const target = details || tr;
    target.scrollIntoView({ block: 'start' });
    (details ? details.querySelector('summary') : tr).focus({ preventScroll: true });
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

  // ---- requirements, folded away: every check with what it requires and from where, and the
  // cases where it failed (or was an advisory); the checks that failed first
  function requirements() {
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
    const table = el('table', { id: 'requirement-table', class: 'stacks' }, el('tr', {}, ...['check', 'requirement', 'from', 'where it failed'].map((h) => el('th', { scope: 'col' }, h))));
    const entries = [...by.entries()].sort((a, b) => (b[1].cases.length > 0) - (a[1].cases.length > 0) || a[0].localeCompare(b[0]));
    for (const [check, r] of entries) {
      const failed = [...new Set(r.cases)];
      table.append(el('tr', { dataset: { check, failed: failed.length } }, el('td', {}, check), el('td', {}, r.requirement || ''),
        el('td', { class: 'source' }, `${r.level}: ${r.source || ''}`),
        failed.length ? el('td', { class: 'fail' }, folded(failed.join('\n'), 12)) : el('td', { class: 'pass' }, `no failure in ${judged} judged case(s)`)));
    }
    const failing = entries.filter(([, r]) => r.cases.length).length;
    body.append(el('details', { id: 'requirements', class: 'section' },
      el('summary', {}, el('h2', {}, `Requirements: ${entries.length} checks, ${failing} failed somewhere`)), scrollBox(table)));
  }

  // ---- against the baseline: known, stale (fixed since, or changed), pinned texts changed, not run
  function baseline() {
    const b = report.baseline;
    if (!b) return;
    body.append(el('h2', { id: 'baseline' }, `Against the baseline ${b.file}`));
    const fresh = cases.filter((c) => c.verdict === 'fail').length;
    // Cases and entries apart (an entry names one check of one case): as the terminal says it.
    const known = cases.filter((c) => c.verdict === 'known').length;
    const entries = (s) => b.entries.filter((e) => e.status === s).length;
    body.append(el('p', { id: 'baseline-counts' }, `${fresh} new failure(s); ${known} failed case(s) known by ${entries('matched')} matched entr(ies); ${entries('stale')} stale (fixed since, or failing otherwise); ${entries('changed')} whose pinned texts changed (their cases fail); ${entries('not-run')} not run here.`));
    if (b.catalogWarning) body.append(el('p', { class: 'known' }, b.catalogWarning));
    const table = el('table', { class: 'stacks' }, el('tr', {}, ...['entry', 'status', 'why'].map((h) => el('th', { scope: 'col' }, h))));
    for (const e of b.entries) table.append(el('tr', {}, el('td', {}, `${e.id} (line ${e.line})`), el('td', {}, e.status), el('td', {}, e.why || e.reason || '')));
    body.append(scrollBox(table));
  }

  // ---- what the suite itself found
  function suite() {
    const f = report.findings || [];
    if (!f.length && !(report.stragglers || []).length) return;
    body.append(el('h2', {}, 'The suite'));
    for (const x of f) body.append(finding(x, false));
    if ((report.stragglers || []).length) body.append(el('p', {}, `processes left behind (killed): ${report.stragglers.join(', ')}`));
  }

  // What failed first: its causes, where it stands, the suite's own findings, the cases
  // (failures first); then the baseline, and the requirements folded away.
  header();
  sincePrevious();
  causes();
  matrix();
  suite();
  caseList();
  baseline();
  requirements();
  readHash();
  applyFromState();
  // A link to `#cause=3` or `#case=…`, or an address edited by hand, acts on the page already
  // open.
  window.addEventListener('hashchange', () => { readHash(); applyFromState(); });
  document.documentElement.dataset.ready = 'yes';
})();
