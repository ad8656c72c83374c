// An application's first tab: its figures (users, licenses, online now, logins today and
// this week, failed logins), the last events, and a link to each page.

import { h, fmtDate, fmtNum, errorNotice, clear } from '../dom.js';
import { get } from '../api.js';
import { section } from '../forms.js';
import { stat } from './apps.js';
import { levelBadge } from './logs.js';

export async function overview(ctx) {
  const id = ctx.appId;
  const cards = h('div.cards#app-overview');
  const events = h('div#last-events');
  async function load() {
    clear(cards); clear(events);
    const [s, week, recent] = await Promise.allSettled([
      get(`/api/apps/${id}/stats`), get(`/api/apps/${id}/analytics/overview`, { period: '7d' }), get(`/api/apps/${id}/analytics/recent`, { limit: 10 })]);
    if (s.status === 'rejected') { cards.append(errorNotice(s.reason, load)); return; }
    const st = s.value;
    const failed = week.status === 'fulfilled' ? week.value.activity.failedLogins : null;
    cards.append(
      stat('Users', st.users.total, `${fmtNum(st.users.active)} active · ${fmtNum(st.users.banned)} banned`),
      stat('Licenses', st.licenses.total, `${fmtNum(st.licenses.used)} used · ${fmtNum(st.licenses.unused)} unused`),
      stat('Online now', st.sessions.active, 'client sessions'),
      stat('Logins today', st.logins.today, `${fmtNum(st.logins.thisWeek)} this week`),
      stat('Failed logins', failed, 'last 7 days'));
    if (recent.status === 'rejected') { events.append(errorNotice(recent.reason, load)); return; }
    events.append(recent.value.length ? h('ol.feed.overview-events', recent.value.map((e) => h('li',
      h('time', { text: fmtDate(e.createdAt) }), levelBadge(e.level), h('code', { text: e.event }), h('span', { text: [e.message, e.username].filter(Boolean).join(' · ') }))))
      : h('p.muted', { text: 'No events yet: they appear when clients init and sign in.' }));
  }
  await load();
  const link = (tab, label, what) => h('li', h('a', { href: `#/apps/${id}/${tab}`, text: label }), ' ', h('span.muted', { text: what }));
  return h('div', h('h2', { text: 'Overview' }), cards,
    h('div.grid', section('Last events', events),
      section('Pages', h('ul', link('users', 'Users', 'accounts, bans, bulk actions, CSV'), link('licenses', 'Licenses', 'keys, offline files, seats, import/export'),
        link('logs', 'Logs', 'every event with its data'), link('analytics', 'Analytics', 'over time and by country'),
        link('live', 'Live', 'who is online now'), link('integrations', 'Integrations', 'webhooks and deliveries'),
        link('audit', 'Audit', 'who changed what'), link('settings', 'Settings', 'locks, signing, secret')))));
}
