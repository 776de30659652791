// open.js SPEC.json: open each file of the spec in headless chromium and print
// TAP lines. The spec is a list of {file, expect: {selector: min count},
// zoom: bool, search: "term", texts: [literal text that must be shown],
// bars: bool (each bar chart of a report agrees with the summary table beside
// it, and its bars' drawn widths with their values), screenshot: "path.png",
// speedscope: {function: [total ns, self ns]} (file is a profile opened in
// speedscope, whose Sandwich view must show those figures)}. Every page must load without console errors, page
// errors, dialogs (an escaped name that ran would alert) or network requests.
'use strict';
const path = require('path');
const fs = require('fs');
const { chromium } = require(path.join(process.env.PW_DIR, 'node_modules', 'playwright-core'));

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let n = 0;
const ok = (cond, what) => console.log(`${cond ? 'ok' : 'not ok'} ${++n} - ${what}`);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage',
           '--disable-background-networking', '--disable-component-update',
           '--disable-sync', '--no-first-run', '--disable-features=Translate',
           '--dns-prefer-ipv6=false', '--host-resolver-rules=MAP * ~NOTFOUND'],
  });
  for (const s of spec) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [], dialogs = [], remote = [];
    const name = path.basename(s.file);
    page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', e => errors.push(String(e)));
    page.on('dialog', d => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
    page.on('request', r => { if (!/^(file|data|about):/.test(r.url())) remote.push(r.url()); });
    if (s.speedscope) {
      // s.file is a profile (pprof) for speedscope's own page (from npm): load it
      // as its user does, through Browse, and read the Sandwich view's table.
      await page.goto('file://' + path.join(process.env.PW_DIR, 'node_modules', 'speedscope',
                                            'dist', 'release', 'index.html'), { waitUntil: 'load' });
      const [chooser] = await Promise.all([page.waitForEvent('filechooser'),
                                           page.locator('label[for=file]').click()]);
      await chooser.setFiles(path.resolve(s.file));
      await page.getByText('Sandwich').first().click();
      await page.locator('tr td').first().waitFor({ timeout: 10000 }).catch(() => {});
      ok((await page.title()).startsWith(name), `${name}: speedscope opens it (title '${await page.title()}')`);
      const rows = await page.evaluate(() => {
        const units = { ns: 1, 'µs': 1e3, ms: 1e6, s: 1e9, min: 60e9 };
        // "69.39µs (100%)": the value and half its last printed digit
        const num = t => { const m = /^([0-9.]+)\s*(ns|µs|ms|s|min)\b/.exec(t.trim());
                           if (!m) return null;
                           const d = (m[1].split('.')[1] || '').length;
                           return { v: +m[1] * units[m[2]], tol: 0.5 * Math.pow(10, -d) * units[m[2]] }; };
        const out = {};
        for (const tr of document.querySelectorAll('tr')) {
          const td = tr.querySelectorAll('td');
          if (td.length !== 3) continue;
          out[td[2].textContent.trim()] = { total: num(td[0].firstChild.textContent),
                                            self: num(td[1].firstChild.textContent) };
        }
        return out;
      });
      ok(Object.keys(rows).length > 0, `${name}: speedscope's Sandwich view lists ${Object.keys(rows).length} functions`);
      for (const [fn, [total, self]] of Object.entries(s.speedscope)) {
        const r = rows[fn];
        const near = (x, want) => x && Math.abs(x.v - want) <= x.tol + 1e-9;
        ok(r && near(r.total, total) && near(r.self, self),
           `${name}: speedscope's total and self of '${fn}' are sonde's (${total} ns, ${self} ns)` +
           (r ? ` (shown ${r.total && r.total.v}, ${r.self && r.self.v})` : ' (not listed)'));
      }
    } else {
      await page.goto('file://' + path.resolve(s.file), { waitUntil: 'load' });
    }
    for (const [sel, min] of Object.entries(s.expect || {})) {
      const c = await page.locator(sel).count();
      ok(c >= min, `${name}: ${c} '${sel}' (at least ${min})`);
    }
    for (const t of s.texts || []) {
      const shown = await page.evaluate(t => document.documentElement.textContent.includes(t), t);
      ok(shown, `${name}: shows ${JSON.stringify(t)} as text`);
    }
    if (s.zoom) {
      // Click the widest frame that is not the root: it must fill the width.
      const r = await page.evaluate(() => {
        const svg = document.querySelector('svg.sonde-flame');
        const fr = [...svg.querySelectorAll('g.f')].filter(g => g.getAttribute('data-d') === '1');
        fr.sort((a, b) => b.getAttribute('data-w') - a.getAttribute('data-w'));
        const g = fr[0];
        const before = +g.querySelector('rect').getAttribute('width');
        const hiddenBefore = svg.querySelectorAll('g.f[style*="none"]').length;
        return { n: g.getAttribute('data-n'), x: g.getAttribute('data-x'), before, hiddenBefore,
                 total: svg.querySelectorAll('g.f').length };
      });
      await page.locator(`svg.sonde-flame g.f[data-d="1"][data-x="${r.x}"]`).first().click();
      const after = await page.evaluate(() => {
        const svg = document.querySelector('svg.sonde-flame');
        const z = svg.getAttribute('data-zoomed');
        const g = [...svg.querySelectorAll('g.f')].find(g => g.getAttribute('data-n') === z &&
                                                       g.style.display !== 'none' && g.getAttribute('data-d') === '1');
        return { z, width: g ? +g.querySelector('rect').getAttribute('width') : -1,
                 shown: [...svg.querySelectorAll('g.f')].filter(g => g.style.display !== 'none').length };
      });
      ok(after.z === r.n, `${name}: click zooms into '${r.n}'`);
      ok(after.width > r.before || r.before > 1150, `${name}: the zoomed frame widens (${r.before.toFixed(1)} -> ${after.width.toFixed(1)} px)`);
      ok(after.width > 1150, `${name}: the zoomed frame fills the graph`);
      ok(after.shown < r.total, `${name}: frames outside the zoomed one are hidden (${after.shown} of ${r.total} shown)`);
      await page.locator('svg.sonde-flame .reset').first().click();
      const reset = await page.evaluate(() => !document.querySelector('svg.sonde-flame').getAttribute('data-zoomed'));
      ok(reset, `${name}: reset zoom goes back`);
    }
    if (s.bars) {
      // Every bar of every profile's bar chart: its value (the bar's title) is the
      // table's for that resource (the mean; memory: the bytes of its allocating
      // rows, n x mean; trace: its outermost call, the max of a function entered once
      // from the top), and the drawn widths are in the ratio of the values.
      const res = await page.evaluate(() => {
        const units = { ns: 1, 'µs': 1e3, ms: 1e6, s: 1e9, B: 1, KiB: 1024, MiB: 1 << 20, GiB: 1 << 30 };
        // a printed value and how far it may be from what it rounds: half its last digit
        const num = t => { const m = /^(-?[0-9.]+) ?([a-zA-Zµ]*)$/.exec(t.trim());
                           if (!m) return { v: NaN, tol: 0 };
                           const u = units[m[2]] || 1, d = (m[1].split('.')[1] || '').length;
                           return { v: +m[1] * u, tol: 0.5 * Math.pow(10, -d) * u }; };
        const out = [];
        for (const sec of document.querySelectorAll('section.profile')) {
          const fig = sec.querySelector('figure[id^="bars-"]'), tab = sec.querySelector('table.summary');
          if (!fig || !tab) continue;
          const rows = [...tab.querySelectorAll('tbody tr')].map(tr => [...tr.cells].map(c => c.textContent));
          const bars = [...fig.querySelectorAll('g.bar rect')].map(r => {
            const m = /^(.*): ([^(]*) \(/.exec(r.querySelector('title').textContent);
            return { name: m[1], v: num(m[2]), w: +r.getAttribute('width') };
          });
          const vmax = Math.max(...bars.map(b => b.v.v)), wmax = Math.max(...bars.map(b => b.w));
          // the longest bar's printed value is rounded too: every ratio to it carries that
          const tmax = bars.find(b => b.v.v === vmax).v.tol;
          for (const b of bars) {
            const mine = rows.filter(r => r[0] === b.name || r[0].startsWith(b.name + ' ('));
            const alloc = mine.filter(r => !/\((free|delete|delete\[\]|munmap)\)$/.test(r[0]));
            const cand = mine.flatMap(r => [num(r[2]), num(r[6])]);
            cand.push(alloc.reduce((t, r) => { const n = +r[1], m = num(r[2]);
                                               return { v: t.v + n * m.v, tol: t.tol + n * m.tol }; },
                                   { v: 0, tol: 0 }));
            const w = b.w / wmax, v = b.v.v / vmax;
            out.push({ sec: sec.id, name: b.name, v: b.v.v,
                       table: cand.some(c => Math.abs(c.v - b.v.v) <= c.tol + b.v.tol + 1e-9),
                       // the values' own rounding (this bar's and the longest's), and a
                       // tenth of a pixel of the drawing's
                       drawn: Math.abs(w - v) <= b.v.tol / vmax + v * tmax / vmax + 0.15 / wmax + 1e-6 });
          }
        }
        return out;
      });
      ok(res.length > 0, `${name}: ${res.length} bars read beside their tables`);
      for (const r of res) {
        ok(r.table, `${name}: ${r.sec} bar '${r.name}' (${r.v}) is the table's value`);
        ok(r.drawn, `${name}: ${r.sec} bar '${r.name}' is drawn to scale`);
      }
    }
    if (s.search) {
      const share = await page.evaluate(t => document.querySelector('svg.sonde-flame').sondeSearch(t), s.search);
      ok(share > 0 && share <= 1, `${name}: search '${s.search}' matches ${(100 * share).toFixed(1)}%`);
    }
    if (s.screenshot) {
      // Straight through CDP: playwright's screenshot waits on a frame that
      // Debian's newer chromium never sends in headless mode.
      const cdp = await page.context().newCDPSession(page);
      const shot = await cdp.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
      fs.writeFileSync(s.screenshot, Buffer.from(shot.data, 'base64'));
      ok(fs.statSync(s.screenshot).size > 0, `${name}: screenshot ${path.basename(s.screenshot)}`);
    }
    ok(errors.length === 0, `${name}: no console or page errors ${errors.length ? JSON.stringify(errors) : ''}`);
    ok(dialogs.length === 0, `${name}: no dialog opened (nothing injected ran) ${dialogs.length ? JSON.stringify(dialogs) : ''}`);
    ok(remote.length === 0, `${name}: no network request ${remote.length ? JSON.stringify(remote) : ''}`);
    await page.close();
  }
  await browser.close();
  console.log(`1..${n}`);
})().catch(e => { console.log(`not ok ${++n} - browser run failed: ${e}`); console.log(`1..${n}`); process.exit(1); });
