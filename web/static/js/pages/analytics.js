// Analytics: overview cards, the timeseries chart (uPlot), geography and recent activity.

import { h, clear, fmtDate, fmtNum } from '../dom.js';
import { get } from '../api.js';
import { section, field } from '../forms.js';
import { stat } from './apps.js';
import { levelBadge } from './logs.js';
import { table } from './users.js';

let cssLoaded = false;

export async function analytics(ctx) {
  const base = `/api/apps/${ctx.appId}/analytics`;
  const cards = h('div.cards#overview');
  const chartBox = h('div.chart#chart', { role: 'img', 'aria-label': 'events over time' });
  const geo = h('div#geography');
  const recent = h('div#recent');
  const period = field({ name: 'period', label: 'Period', type: 'select', value: '24h', options: [['1h', 'last hour'], ['24h', '24 hours'], ['7d', '7 days'], ['30d', '30 days']] });
  const events = await get(`/api/apps/${ctx.appId}/logs/events`).catch(() => []);
  const evSel = field({ name: 'event', label: 'Event', type: 'select', value: 'user.login', options: [...new Set(['user.login', 'user.login_failed', 'user.register', 'session.init', ...events])].map((e) => [e, e]) });
  let plot = null;

  async function overview() {
    clear(cards);
    try {
      const p = period.querySelector('select').value;
      const o = await get(base + '/overview', { period: p });
      cards.append(stat('Users', o.users.total, `${fmtNum(o.users.new)} new · ${fmtNum(o.users.active)} active · ${fmtNum(o.users.banned)} banned`),
        stat('Licenses', o.licenses.total, `${fmtNum(o.licenses.unused)} unused`), stat('Sessions', o.sessions.active, 'active now'),
        stat('Logins', o.activity.logins, `${fmtNum(o.activity.failedLogins)} failed · ${fmtNum(o.activity.registrations)} sign-ups`));
    } catch (x) { cards.append(h('p.error', { text: x.message })); }
  }
  async function chart() {
    const p = period.querySelector('select').value;
    const tsPeriod = p === '1h' ? '24h' : p;
    let series;
    try { series = await get(base + '/timeseries', { period: tsPeriod, event: evSel.querySelector('select').value }); } catch (x) { clear(chartBox).append(h('p.error', { text: x.message })); return; }
    const { default: uPlot } = await import('../../vendor/uplot/uPlot.esm.js');
    if (!cssLoaded) {
      document.head.append(h('link', { rel: 'stylesheet', href: new URL('../../vendor/uplot/uPlot.min.css', import.meta.url).href }));
      cssLoaded = true;
    }
    // The series has hourly buckets at best: "last hour" keeps the buckets of that hour.
    if (p === '1h') { const since = Date.now() - 2 * 3600 * 1000; series = series.filter((b) => Date.parse(b.bucket) >= since); }
    const xs = series.map((b) => Date.parse(b.bucket) / 1000);
    const ys = series.map((b) => b.count);
    if (plot) plot.destroy();
    clear(chartBox);
    const width = Math.max(280, chartBox.clientWidth || 600);
    plot = new uPlot({
      width, height: 260,
      series: [{}, { label: evSel.querySelector('select').value, stroke: '#3b5bdb', fill: 'rgba(59,91,219,0.12)', width: 2 }],
      axes: [{}, { label: 'count' }],
      scales: { y: { range: (u, min, max) => [0, Math.max(1, max)] } },
    }, [xs, ys], chartBox);
    chartBox.dataset.points = String(ys.length);
    chartBox.dataset.total = String(ys.reduce((a, b) => a + b, 0));
  }
  async function rest() {
    clear(geo); clear(recent);
    try {
      const g = await get(base + '/geography', { days: 30 });
      geo.append(g.length ? table(['Country', 'Events'], g.map((r) => [r.country, fmtNum(r.count)]))
        : h('p.muted#geo-empty', { text: 'No countries yet. Countries come from a GeoIP database: set KEYWARD_GEOIP_DB (or --geoip-db) to a GeoLite2-Country or -City file and restart the server.' }));
    } catch (x) { geo.append(h('p.error', { text: x.message })); }
    try {
      const r = await get(base + '/recent', { limit: 20 });
      recent.append(table(['Time', 'Level', 'Event', 'Message', 'User'], r.map((l) => [fmtDate(l.createdAt), levelBadge(l.level), l.event, l.message || '', l.username || '—'])));
    } catch (x) { recent.append(h('p.error', { text: x.message })); }
  }
  const refresh = () => { overview(); chart(); };
  period.addEventListener('change', refresh);
  evSel.addEventListener('change', chart);
  const onResize = () => { if (plot) plot.setSize({ width: Math.max(280, chartBox.clientWidth), height: 260 }); };
  window.addEventListener('resize', onResize);
  ctx.setCleanup(() => { window.removeEventListener('resize', onResize); if (plot) plot.destroy(); });
  queueMicrotask(() => { refresh(); rest(); });
  return h('div', h('div.filters', period, evSel), cards, section('Over time', chartBox), section('Recent activity', recent), section('Geography (30 days)', geo));
}
